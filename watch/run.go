package watch

import (
	"context"
	"fmt"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
)

// SampleCounts returns how many sampling instants were kept (samples taken,
// and instants Run slept through because nothing was to be read at them:
// ByNeed.Coarse) and how many were skipped because a sample came late
// (the process was not scheduled in time, or its work took longer than the
// interval). Safe to call while Run runs.
func (w *Watcher) SampleCounts() (kept, missed int64) {
	kept = w.taken.Load()
	if c := w.clock.Load(); c != nil {
		_, missed = c.Counts()
		kept += c.Planned()
	}
	return kept, missed
}

// Rediscover is the shortest time between two Discovers that a directory
// made in the hierarchy asks for: a new group is sampled within it, and
// the runtime's several directories for one container are found at once.
const Rediscover = 100 * time.Millisecond

// Run samples every SampleEvery and calls emit with a report every interval,
// from this goroutine, until ctx ends or emit returns false. Groups that
// appear are picked up within Rediscover of their directory being made
// (inotify; at each report where inotify cannot be had). It sleeps in
// clock_nanosleep (cgroup.Clock: absolute instants, no drift); instants the
// watcher could not keep up with are skipped and counted (SampleCounts),
// not queued. With ByNeed.Coarse it sleeps through the instants at which
// no group is to be read.
func (w *Watcher) Run(ctx context.Context, interval time.Duration, emit func([]Stats) bool) error {
	return w.RunFrom(ctx, time.Now(), interval, emit)
}

// RunFrom is Run with its instants counted from start (start + n *
// SampleEvery; the samples' times are since start): a caller that keeps
// its own time (the agent's, on the wall clock) puts the instants on it.
func (w *Watcher) RunFrom(ctx context.Context, start time.Time, interval time.Duration, emit func([]Stats) bool) error {
	if interval < w.opts.SampleEvery {
		return fmt.Errorf("interval %s is shorter than the sampling interval %s: give a longer one", interval, w.opts.SampleEvery)
	}
	clock := cgroup.NewClock(start, w.opts.SampleEvery)
	w.clock.Store(clock)
	wait := w.waiter(ctx, clock)
	w.Sample(0)
	next := interval
	discovered, walked := time.Duration(0), time.Duration(0)
	for {
		at, ok := wait()
		if !ok {
			return nil
		}
		w.Sample(at) // it reads the events
		if at < next {
			if w.rediscover && at-discovered >= Rediscover {
				if err := w.Discover(); err != nil {
					return err
				}
				discovered = at
			}
			continue
		}
		stats := w.Report()
		now := time.Now()
		for i := range stats {
			stats[i].Time = now
		}
		if !emit(stats) {
			return nil
		}
		w.repickPods() // after emit: the caller has the report's settings
		for next <= at {
			next += interval
		}
		// The whole tree is walked again at each report where inotify
		// cannot tell of new groups, else at least every FullDiscover (a
		// safety net: the events find new groups within Rediscover), and
		// when names came from elsewhere (SetNames).
		if w.rediscover || w.Unwatched() != nil || at-walked >= FullDiscover || w.namesChanged() {
			if err := w.Discover(); err != nil {
				return err
			}
			discovered, walked = at, at
		}
	}
}

// FullDiscover is the longest Run goes without walking the whole cgroup
// tree again where inotify watches every directory.
const FullDiscover = time.Minute

// namesChanged reports whether SetNames gave names since the last
// Discover.
func (w *Watcher) namesChanged() bool {
	w.extraMu.Lock()
	defer w.extraMu.Unlock()
	return w.extraChanged
}

// maxSkip bounds the instants Run sleeps through at once (ByNeed.Coarse):
// it looks for the coarse grid's next instant no further, and wakes there
// whatever OnGrid says.
const maxSkip = 1000

// waiter returns Run's wait before each sample: clock.WaitFor the next
// instant at which a group is to be read (the next one when a group is hot
// or ByNeed.Coarse is off, else the coarse grid's next), false once ctx is
// done.
func (w *Watcher) waiter(ctx context.Context, clock *cgroup.Clock) func() (time.Duration, bool) {
	if w.newWait != nil {
		return w.newWait(ctx, clock)
	}
	every := w.opts.SampleEvery
	return func() (time.Duration, bool) {
		n := clock.Instant() + 1
		if w.opts.ByNeed.Coarse && !w.hot && !w.rediscover {
			for m := n; m < n+maxSkip; m++ {
				if w.opts.ByNeed.Policy.OnGrid(time.Duration(m) * every) {
					n = m
					break
				}
			}
		}
		return clock.WaitFor(ctx, n)
	}
}
