package agent

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/startup"
)

// startupStep is the grid of a start-up's demand profile: the agent's
// 10 ms sample interval (a container is sampled every 10 ms while it
// starts: need.go).
const startupStep = 10 * time.Millisecond

// startupDemand is what a summary keeps of its start-up's demand for the
// boost (startup.Plan): each start-up chunk's use on the 10 ms grid, with
// the work a limit held back moved to where it was asked for (the
// reconstruction's arrivals), by the chunk's agent time. A start-up of a
// minute is 6,000 float32 (24 KB); it goes with the start-up's block.
// It is not checkpointed: after an agent restart the start-up's block
// stays, its boost does not.
type startupDemand struct {
	segs []startupSeg
	// restarts counts the times the group's usage counter fell (the
	// group made again, its start-up again) while it was summarised;
	// restartAt is the agent time of the last: segments before it belong
	// to an older start-up.
	restarts  int
	restartAt time.Duration
}

type startupSeg struct {
	start time.Duration
	cores []float32
}

// startupCores is a start-up chunk's demand after from (the prefill and
// lead of its replay) on the 10 ms grid, run at most the chunk's CPUs at
// once (startup.FromSamples). It runs once per start-up chunk, in the
// replay worker, never per sample.
func startupCores(d *advise.Demand, from time.Duration) []float32 {
	if d.Scale != 0 {
		return nil // a chunk's demand is never scaled
	}
	p := startup.FromSamples(d.At, d.Usage, from, startupStep, float64(d.Cores))
	out := make([]float32, len(p.Cores))
	for i, c := range p.Cores {
		out[i] = float32(c)
	}
	return out
}

// foldStartup keeps a replayed start-up chunk's demand (Fold).
func (s *ContainerSummary) foldStartup(r *Replayed) {
	if r.startup && len(r.startupCores) > 0 {
		s.sd.segs = append(s.sd.segs, startupSeg{start: r.start, cores: r.startupCores})
	}
}

// noteRestart marks a start-up again when the usage counter of a group
// the agent saw start fell (the group was made again at the same path):
// the demand from at on is a new start-up, kept apart from the advice for
// another startup, and the newest is the one advised. A group the agent
// found running keeps none (its counter falling is a group made again,
// not one seen starting). A container restarted by the kubelet is a new
// group (a new container ID): a new entry with its own start-up. It runs
// before the sample goes in (AddCounts).
func (s *ContainerSummary) noteRestart(at, usage, startup time.Duration) {
	if startup <= 0 || s.startupUntil == 0 || !s.rawHave || usage >= s.rawUsage {
		return
	}
	s.sd.restarts++
	s.sd.restartAt = at
	s.SetStartup(at + startup)
}

// startupProfile is the newest start-up's demand on the 10 ms grid, from
// its first chunk; the segments of an older start-up (before a restart)
// are dropped.
func (s *ContainerSummary) startupProfile() startup.Profile {
	segs := s.sd.segs[:0:0]
	for _, g := range s.sd.segs {
		if g.start >= s.sd.restartAt {
			segs = append(segs, g)
		}
	}
	p := startup.Profile{Step: startupStep}
	if len(segs) == 0 {
		return p
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].start < segs[j].start })
	first := segs[0].start
	for _, g := range segs {
		off := int((g.start - first + startupStep/2) / startupStep)
		for len(p.Cores) < off+len(g.cores) {
			p.Cores = append(p.Cores, 0)
		}
		for k, c := range g.cores {
			p.Cores[off+k] += float64(c)
		}
	}
	return p
}

// StartupBoost is a start-up's boost as /advice shows it (startup.Boost),
// with its renderings: the VPA's startupBoost and a kube-startup-cpu-boost
// object.
type StartupBoost struct {
	startup.Boost
	VPA             *startup.VPAStartupBoost `json:"vpa_startup_boost,omitempty"`
	StartupCPUBoost *startup.StartupCPUBoost `json:"startup_cpu_boost,omitempty"`
}

// startupBoostOf sizes c's newest start-up's boost against limitMilli (the
// advised limit, else the current one), capped at the node's CPUs. It runs
// where the view is computed: once per fold or /advice, not per sample.
// A start-up too short to measure, or with no limit to size against, has
// no boost and says why.
func (a *Agent) startupBoostOf(c *container, v *View, limitMilli int64) (*StartupBoost, string) {
	if limitMilli <= 0 {
		return nil, "no boost: no limit to size it against (no advice yet, no current limit)"
	}
	p := c.sum.startupProfile()
	o := startup.Options{Share: a.cfg.StartupShare, MaxCores: float64(a.cfg.MaxMilli) / 1000}
	o.Hidden, o.BoundCores = startupHidden(c.sum.Startup(), p), o.MaxCores
	b, err := startup.Plan(p, limitMilli, o)
	if errors.Is(err, startup.ErrTooShort) {
		return nil, fmt.Sprintf("no boost: %v", err)
	}
	if err != nil {
		return nil, fmt.Sprintf("no boost: %v", err)
	}
	sb := &StartupBoost{Boost: b, VPA: b.VPA()}
	name := v.Container
	if name == "" {
		name = "app"
	}
	labels := map[string]string{}
	if v.Pod != "" {
		labels["app"] = v.OwnerName
	}
	sb.StartupCPUBoost = b.KubeStartupCPUBoost(startup.Target{Name: name + "-startup-boost", Namespace: v.Namespace, Container: name, MatchLabels: labels})
	if c.sum.sd.restarts > 0 {
		sb.Note += fmt.Sprintf("; the newest of %d start-ups (the group was made again)", c.sum.sd.restarts+1)
	}
	return sb, ""
}

// StartupDelay is how much a limit lengthens a start-up: its length
// replayed unlimited and under the limit (startup.Profile.LengthAt).
type StartupDelay struct {
	LimitMilli       int64   `json:"limit_millicores"`
	UnlimitedSeconds float64 `json:"unlimited_seconds"`
	AtLimitSeconds   float64 `json:"at_limit_seconds"`
	DelaySeconds     float64 `json:"delay_seconds"`
}

// startupDelayOf is c's newest start-up's delay under limitMilli; nil for
// a start-up too short to measure.
func (a *Agent) startupDelayOf(c *container, limitMilli int64) *StartupDelay {
	b, err := startup.Plan(c.sum.startupProfile(), limitMilli, startup.Options{Share: a.cfg.StartupShare})
	if err != nil {
		return nil
	}
	return &StartupDelay{LimitMilli: limitMilli, UnlimitedSeconds: b.UnlimitedSeconds, AtLimitSeconds: b.AtLimitSeconds, DelaySeconds: b.DelaySeconds}
}

// parseShare reads a start-up share, "10%" or "0.1" ("" is 0: the
// default), above 0 and at most 1.
func parseShare(s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if strings.HasSuffix(s, "%") {
		v /= 100
	}
	if err != nil || !(v > 0 && v <= 1) {
		return 0, fmt.Errorf("start-up share %q: give a share above 0 and at most 100%%", s)
	}
	return v, nil
}

// startupHidden reports whether c's start-up ran throttled in half or
// more of the 100 ms periods its profile spans (the block's own
// nr_throttled): its limit let through a flat stream, its demand above it
// unseen, and a boost sized from the profile as seen would find none
// needed (startup.Hidden).
func startupHidden(b *Block, p startup.Profile) bool {
	return b != nil && startup.Hidden(b.Throttled, p, 100*time.Millisecond)
}
