package agent

import (
	"hash/fnv"
	"time"

	"github.com/throttlelab/throttlelab/watch"
)

// policy is the agent's sampling by need (watch.Policy): the containers
// it summarises (Config.Select) read at every sample, by need (Config.Hot)
// on the node's coarse grid.
type policy struct{ a *Agent }

// Picks implements watch.Policy.
func (p policy) Picks(id watch.Identity) bool { return p.a.cfg.Select(id) }

// OnGrid implements watch.Policy: whether watcher time at is on the node's
// coarse grid.
func (p policy) OnGrid(at time.Duration) bool {
	return p.a.cfg.Summary.OnGrid(p.a.base+at, p.a.off)
}

// Observe implements watch.Policy (observe).
func (p policy) Observe(s watch.Sample) bool { return p.a.observe(s) }

// observe gets every group's usage at every sample (watch.Policy). A
// selected group the agent does not know yet is added here, at its first
// sample after the watcher found it, not at the next report. It says
// whether the container is hot (sampling by need); s.PerCPU is its per-CPU
// split, read while it is hot (percpu.go).
func (a *Agent) observe(s watch.Sample) bool {
	path, id, at, usageNs, throttled, perCPU := s.Path, s.Identity, s.At, s.UsageNs, s.ThrottledPeriods, s.PerCPU
	a.mu.Lock()
	if !a.sampled {
		a.firstSample, a.sampled = a.base+at, true
	}
	c := a.byID[s.ID]
	if c == nil {
		if c = a.containers[path]; c != nil {
			a.byID[s.ID] = c
		}
	}
	if c == nil {
		if !a.selects(id, path) {
			if id.Sandbox {
				if _, known := a.sandboxes[path]; !known {
					a.sandboxes[path] = a.reports
					if a.base+at > a.firstSample {
						a.askOwners()
					}
				}
			}
			a.mu.Unlock()
			return false // not a container to summarise
		}
		c = a.addContainer(path, id, a.base+at)
	}
	t := a.base + at
	a.mu.Unlock()
	if a.byNeed && !a.cfg.takeIdle && perCPU == nil && c.idle(t, usageNs, throttled) && a.cfg.Summary.OnGrid(t, a.off) {
		c.pending = append(c.pending, t)
		if len(c.pending) >= maxIdleHeld {
			a.catchUp(c)
		}
		return false
	}
	a.catchUp(c) // at the counters of the last sample, which it held
	c.obsHave, c.obsUsage, c.obsThrottled = true, usageNs, throttled
	return a.take(c, t, usageNs, throttled, perCPU)
}

// maxIdleHeld bounds the idle samples a container holds for catchUp.
const maxIdleHeld = 256

// idle reports whether the sample at agent time t, of usage usageNs and
// nr_throttled throttled, may wait for catchUp: the container's counters
// stand as at its last sample, it is cold and asks not to be hot, it has
// its advice (its first busy period taken against it), and it is neither
// held hot nor starting. Such a sample changes nothing that decides
// sampling (need.wants: a grid period's sum of 0 reaches no threshold, no
// throttle moved, no state trigger), so taking it later, in order with the
// others, gives the summary and the sampling state the same values; what
// it saves is each sample's first touch of the container's state, ten
// times a second for each of 200 idle containers. Only the sampling
// goroutine calls it.
func (c *container) idle(t time.Duration, usageNs, throttled uint64) bool {
	n := &c.need
	return c.obsHave && usageNs == c.obsUsage && throttled == c.obsThrottled && !n.hot && !n.want && !n.gone && n.floor.Load() > 0 && n.first.sum <= 0 && t >= n.hotUntil && t >= c.startupUntil
}

// catchUp takes the samples c holds (idle), in order, as observe would
// have at their instants: before c's next sample that is not idle, and at
// each report (Update), so that what the summary holds lags its last
// sample by one report at most.
func (a *Agent) catchUp(c *container) {
	for _, t := range c.pending {
		a.take(c, t, c.obsUsage, c.obsThrottled, nil)
	}
	c.pending = c.pending[:0]
}

// catchUpAll takes the samples every container holds (catchUp): at each
// report, and when Run ends (before its checkpoint).
func (a *Agent) catchUpAll() {
	a.mu.Lock()
	var held []*container
	for _, c := range a.containers {
		if len(c.pending) > 0 {
			held = append(held, c)
		}
	}
	a.mu.Unlock()
	for _, c := range held {
		a.catchUp(c)
	}
}

// take takes one sample of container c at agent time t into its summary
// and its sampling state, and says whether it is hot.
func (a *Agent) take(c *container, t time.Duration, usageNs, throttled uint64, perCPU []uint64) bool {
	c.mu.Lock()
	if perCPU != nil {
		c.sum.NotePerCPU(t, perCPU) // before the sample it goes with
	}
	c.sum.noteRestart(t, time.Duration(usageNs), a.cfg.Startup)                               // a counter that fell: a start-up again (startup.go)
	chunks := append([]*Chunk(nil), c.sum.AddCounts(t, time.Duration(usageNs), throttled)...) // nil, no allocation, mostly
	c.startupUntil = c.sum.startupUntil
	starting := t < c.sum.startupUntil
	c.mu.Unlock()
	hot := false
	if a.byNeed {
		want, heat := c.need.wants(&a.cfg.Hot, a.cfg.Summary.Period, t, usageNs, throttled, a.cfg.Summary.OnGrid(t, a.off), starting)
		hot = a.hot.decide(c, want, heat, a.cfg.Hot.Max)
	}
	for _, chunk := range chunks {
		select {
		case a.replays <- replayJob{c, chunk}:
		default:
			a.replay(replayJob{c, chunk}) // the replay worker is behind: do it here (Fold takes chunks in any order)
		}
	}
	return hot
}

// addContainer starts the summary of a selected group seen at agent time
// at, from its checkpoint if there is one; a.mu is held. A container that
// was not there at the agent's first sample is starting (Config.Startup):
// the watcher finds it within 0.1 s of its directory being made (where inotify
// works; else at the next report), before its first process runs. So is
// one there at the first sample but not in a checkpoint written less than
// RecentCheckpoint before: it appeared while the agent was down (or since
// its last checkpoint), and what it has left of its start-up is kept apart
// from the agent's first sample on.
func (a *Agent) addContainer(path string, id watch.Identity, at time.Duration) *container {
	c := &container{path: path, id: id, sum: NewSummary(&a.cfg.Summary), since: a.reports}
	if a.byNeed {
		c.sum.SetOffset(a.off) // the node's grid: every chunk on it
	} else {
		c.sum.SetOffset(stagger(path, a.cfg.Summary.Chunk))
	}
	if saved, ok := a.saved[path]; ok {
		c.sum.restore(saved)
		delete(a.saved, path)
		c.need.floor.Store(c.sum.lowestPick(a.targets))
	} else if a.cfg.Startup > 0 && ((a.sampled && at > a.firstSample) || (!a.savedAt.IsZero() && time.Since(a.savedAt) < RecentCheckpoint)) {
		c.sum.SetStartup(at + a.cfg.Startup)
	}
	a.containers[path] = c
	if id.Kind == watch.KindContainer && id.PodUID != "" && (id.Pod == "" || id.Container == "") {
		a.askOwners()
	}
	return c
}

// RecentCheckpoint is how old a checkpoint may be for the containers it
// does not hold to be taken as started since (addContainer): a restart, a
// roll-out of the agent, not a node that was down.
const RecentCheckpoint = 10 * time.Minute

func (a *Agent) replay(j replayJob) {
	r, err := a.cfg.Summary.Replay(j.chunk)
	j.c.mu.Lock()
	defer j.c.mu.Unlock()
	if err != nil {
		j.c.sum.err = err
		a.cfg.Logger.Warn("replay", "cgroup", j.c.path, "err", err)
		return
	}
	j.c.sum.Fold(r)
	j.c.view, j.c.advice = nil, nil // advice is out of date
	if a.byNeed {
		j.c.need.floor.Store(j.c.sum.lowestPick(a.targets))
	}
}

// stagger is a container's chunk offset: its path's hash, in whole
// 100 ms steps of the chunk.
func stagger(path string, chunk time.Duration) time.Duration {
	h := fnv.New32a()
	h.Write([]byte(path))
	steps := max(int64(chunk/(100*time.Millisecond)), 1)
	return time.Duration(int64(h.Sum32())%steps) * 100 * time.Millisecond
}
