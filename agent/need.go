package agent

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/throttlelab/throttlelab/advise"
)

// HotConfig is sampling by need. Every container is read on one node-wide
// coarse grid (SummaryConfig.OnGrid: every period boundary of the phase its
// chunk is replayed at, 100 ms apart, the phase advancing one fine step per
// chunk), which gives each replayed period its sum of demand: whether a
// period throttles under a quota depends only on that sum and what carries
// over, so the throttled counts are those of 10 ms samples. A container is
// hot, and read at every instant (SampleEvery), where the 10 ms detail
// matters (the delays within throttled periods, the 10 ms peak): when a
// period's sum comes within Margin of the lowest ladder limit its advice can
// pick and to MinCores at least, when its nr_throttled moves (for Hold
// after the last of these, but for those within its start-up), while it
// starts (Config.Startup), and without advice yet for its first grid period
// and, once a period reaches MinCores, until its first advice (else it is
// read on the grid: 200 idle containers found at once are not read at
// 10 ms for their first chunk).
type HotConfig struct {
	// Always reads every container at every instant (the 10 ms design, at
	// its cost); it is also what the agent does where the grid does not fall
	// on its instants (a period that is not a multiple of SampleEvery x
	// Phases, a chunk that is not a multiple of the period).
	Always bool
	// Margin: a period's use of (1 - Margin) x the lowest limit the advice
	// can pick, or more, makes the container hot (default 0.25).
	Margin float64
	// MinCores: a period's use under this share of one core (default 0.05,
	// 5 ms of a 100 ms period) never makes a container hot by its sum, near
	// as it may be to the lowest pick. An idle container's lowest pick is
	// set by its rare bursts (a runtime's garbage collection, a health
	// check): the kernel counts only the periods a group runs in, so one
	// burst in a quiet minute is a large throttled share under a limit it
	// exceeds, and the pick is the limit that covers the burst, within the
	// margin of it by construction. With such bursts closer together than
	// Hold (Go forces a collection every 2 minutes) it would be hot for
	// good, read at 10 ms for the delays at limits of tens of millicores
	// (its throttled counts come from the grid exactly, and its delays
	// there are the coarse reading's upper bound). A container that a
	// limit it has throttles turns hot all the same (its nr_throttled).
	MinCores float64
	// Hold is how long a container stays hot after its last trigger
	// (default 5 min).
	Hold time.Duration
	// Max caps the hot containers (default 32), the hottest first: a period
	// at a larger share of its container's lowest pick, or a container
	// throttled, displaces the coldest. Those over the cap are read on the
	// coarse grid (their delays an upper bound).
	Max int
}

func (h *HotConfig) defaults() {
	if h.Margin <= 0 {
		h.Margin = 0.25
	}
	if h.MinCores <= 0 {
		h.MinCores = 0.05
	}
	if h.Hold <= 0 {
		h.Hold = 5 * time.Minute
	}
	if h.Max <= 0 {
		h.Max = 32
	}
}

// Heat of the triggers that are states: a container without advice yet
// (its first grid period, or a period of MinCores since), or starting,
// ranks below a demand trigger (whose heat is its period's share
// of the threshold, 1 or more) and above none; a throttled one above all
// periods but those far over their threshold.
const (
	heatState     = 1
	heatThrottled = 4
)

// need is one container's sampling state. Only the sampling goroutine
// touches it, but floor, which the replay worker sets.
type need struct {
	// floor is the lowest ladder limit (millicores) the container's advice
	// can pick (ContainerSummary.lowestPick); 0: no advice yet.
	floor atomic.Int64
	// The usage at the last grid instant (gridHave: there was one), and
	// nr_throttled at the last sample.
	gridHave  bool
	gridAt    time.Duration
	gridUsage uint64
	thrHave   bool
	throttled uint64
	hotUntil  time.Duration // agent time: hot until then (Hold after a trigger)
	// first is the busiest grid period (its sum, ns; its end and length)
	// while the container has no advice yet, read on the grid: taken
	// against the first advice's floor once there is one (sum -1 after).
	// seen: there was one; busy: one of them reached HotConfig.MinCores.
	// Without advice a container is hot until the first (its first period
	// in detail) and, if busy, until the first advice.
	first struct {
		sum        float64
		at, gap    time.Duration
		seen, busy bool
	}
	heat      float64 // the last trigger's
	want, hot bool    // it asks to be hot; it is (within the cap)
	// gone: the container was dropped (hotSet.drop); a sample taken before
	// that and decided after must not bring it back into the set, where
	// nothing would ever take it out again.
	gone bool
	// why counts the triggers that made the container hot, with the
	// values of the last of each (a debug account: the busy benchmark
	// reports it for the containers hot at its end).
	why hotWhy
}

// hotWhy is a container's account of its hot triggers (need.why).
type hotWhy struct {
	// sums: periods on the grid whose sum reached the threshold; the
	// last one's end, length, sum (ns) and threshold (ns), and the floor
	// (millicores) the threshold came from (unless HotConfig.MinCores
	// set it).
	sums                       int
	sumAt, sumGap              time.Duration
	sum, threshold             float64
	floor                      int64
	throttles                  int // moves of nr_throttled
	throttledAt                time.Duration
	throttledFrom, throttledTo uint64
}

func (w hotWhy) String() string {
	s := fmt.Sprintf("%d sums over the threshold", w.sums)
	if w.sums > 0 {
		s += fmt.Sprintf(" (the last at %s: %s in %s, threshold %s of a floor of %dm)", w.sumAt, time.Duration(w.sum), w.sumGap, time.Duration(w.threshold), w.floor)
	}
	s += fmt.Sprintf(", %d moves of nr_throttled", w.throttles)
	if w.throttles > 0 {
		s += fmt.Sprintf(" (the last at %s: %d to %d)", w.throttledAt, w.throttledFrom, w.throttledTo)
	}
	return s
}

// wants updates n with one sample at agent time at (on the coarse grid or
// not) and says whether the container asks to be hot, and how hot.
func (n *need) wants(h *HotConfig, period time.Duration, at time.Duration, usageNs, throttled uint64, onGrid, starting bool) (bool, float64) {
	heat := 0.0
	// A start-up is hot while it lasts and kept apart from the advice with
	// its throttling: its triggers hold nothing past it (a runtime's
	// start-up throttled under its limit would hold an idle container hot
	// for Hold after it).
	hold := h.Hold
	if starting {
		hold = 0
	}
	if n.thrHave && throttled != n.throttled {
		n.hotUntil, heat = max(n.hotUntil, at+hold), heatThrottled
		n.why.throttles++
		n.why.throttledAt, n.why.throttledFrom, n.why.throttledTo = at, n.throttled, throttled
	}
	n.thrHave, n.throttled = true, throttled
	floor := n.floor.Load()
	// sumOver makes the container hot for a period's sum (ns, over gap)
	// that reaches the threshold of floor.
	sumOver := func(sum float64, end, gap time.Duration) {
		threshold := max((1-h.Margin)*float64(floor)/1000, h.MinCores) * float64(period)
		if r := sum / threshold; r >= 1 {
			n.hotUntil, heat = max(n.hotUntil, at+hold), max(heat, r)
			n.why.sums++
			n.why.sumAt, n.why.sumGap, n.why.sum, n.why.threshold, n.why.floor = end, gap, sum, threshold, floor
		}
	}
	if floor > 0 && n.first.sum > 0 {
		// The first advice: the first chunk's busiest period, read on the
		// grid, is taken against it as if it came now.
		sumOver(n.first.sum, n.first.at, n.first.gap)
		n.first.sum = -1
	}
	if onGrid {
		if n.gridHave && usageNs >= n.gridUsage && at-n.gridAt <= period {
			sum := float64(usageNs - n.gridUsage)
			switch {
			case floor > 0:
				sumOver(sum, at, at-n.gridAt)
			case n.first.sum >= 0:
				n.first.seen = true
				if starting {
					break // kept apart from the advice: it holds nothing past it
				}
				if sum > n.first.sum {
					n.first.sum, n.first.at, n.first.gap = sum, at, at-n.gridAt
				}
				// Under MinCores no advice can make it hot by its sums
				// (the threshold is never lower); from there it may be
				// near the limit its first advice will pick.
				n.first.busy = n.first.busy || sum >= h.MinCores*float64(period)
			}
		}
		n.gridHave, n.gridAt, n.gridUsage = true, at, usageNs
	}
	if at < n.hotUntil {
		heat = max(heat, n.heat)
	} else {
		n.heat = 0
	}
	if starting || (floor == 0 && (!n.first.seen || n.first.busy)) {
		heat = max(heat, heatState)
	}
	n.heat = heat
	return heat > 0, heat
}

// hotSet is the hot containers, at most HotConfig.Max of them.
type hotSet struct {
	mu      sync.Mutex
	members map[*container]struct{}
	// count and capped are the hot containers and those that ask to be
	// and are not, for the metrics.
	count, capped atomic.Int64
}

// decide says whether c, which asks to be hot (want, with heat) or not, is
// hot: within the cap, or hotter than the coldest hot one, which it
// displaces.
func (s *hotSet) decide(c *container, want bool, heat float64, max int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := &c.need
	if n.gone {
		return false
	}
	if !want {
		s.leave(c)
		if n.want {
			n.want = false
			s.capped.Add(-1)
		}
		return false
	}
	if !n.want {
		n.want = true
		s.capped.Add(1)
	}
	if n.hot {
		return true
	}
	if len(s.members) >= max {
		var coldest *container
		for m := range s.members {
			if coldest == nil || m.need.heat < coldest.need.heat {
				coldest = m
			}
		}
		if coldest == nil || coldest.need.heat >= heat {
			return false
		}
		s.leave(coldest) // it asks again at its next sample, and ranks then
	}
	if s.members == nil {
		s.members = map[*container]struct{}{}
	}
	s.members[c] = struct{}{}
	n.hot = true
	s.count.Add(1)
	s.capped.Add(-1)
	return true
}

// leave takes c out of the set; s.mu is held.
func (s *hotSet) leave(c *container) {
	if !c.need.hot {
		return
	}
	delete(s.members, c)
	c.need.hot = false
	s.count.Add(-1)
	if c.need.want {
		s.capped.Add(1)
	}
}

// drop forgets a container that went.
func (s *hotSet) drop(c *container) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leave(c)
	if c.need.want {
		c.need.want = false
		s.capped.Add(-1)
	}
	c.need.gone = true
}

// lowestPick returns the lowest ladder limit (millicores) that meets one of
// the targets over the window, without or with a burst: no advice can pick
// a lower one (the recommendation must also meet its target in every block,
// and with the use higher by the level, advise.LevelOf). 0 when the summary holds no
// demand yet.
func (s *ContainerSummary) lowestPick(targets []advise.Target) int64 {
	span, work := s.Span()
	if span <= 0 {
		return 0
	}
	lo := work / float64(span) * 1000
	lad := s.cfg.Ladder
	for i, l := range lad {
		if float64(l) < lo*0.9 && i+1 < len(lad) && float64(lad[i+1]) < lo*0.9 {
			continue // below the mean: throttled in every period (AdviceFor skips them too)
		}
		if (advise.Point{LimitMilli: l, Period: s.cfg.Period}).Check() != nil {
			continue
		}
		if meetsAny(targets, s.evalKey(i, false)) || meetsAny(targets, s.evalKey(i, true)) {
			return l
		}
	}
	return lad[len(lad)-1]
}

// The hot containers (sampling by need), one series each per agent.
var (
	descHot       = prometheus.NewDesc("throttlelab_agent_hot_containers", "Containers read every sample (10 ms) because their detail matters (near the lowest limit their advice can pick, throttled, starting, or without advice yet and busy); the others are read every 100 ms on the node's grid.", nil, nil)
	descHotCapped = prometheus.NewDesc("throttlelab_agent_hot_capped_containers", "Containers that ask to be hot and are not, over the cap on hot containers (read every 100 ms: their delays an upper bound).", nil, nil)
)

type hotCollector struct{ a *Agent }

func (c hotCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descHot
	ch <- descHotCapped
}

func (c hotCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descHot, prometheus.GaugeValue, float64(c.a.hot.count.Load()))
	ch <- prometheus.MustNewConstMetric(descHotCapped, prometheus.GaugeValue, float64(c.a.hot.capped.Load()))
}

// SettingsEvery is how often, with sampling by need, the agent reads a cold
// container's settings (quota, period, burst, shares or weight) and process
// count; a hot one's are read at every report. It bounds how stale the
// exported limits and request of a container that is not near its limit
// can be (an in-place resize shows within it).
const SettingsEvery = time.Minute
