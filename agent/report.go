package agent

import (
	"time"

	"github.com/throttlelab/throttlelab/watch"
)

// UnreadableAfter is how many reports in a row with an error in a
// container's row make it unreadable: counted in
// throttlelab_agent_unreadable_containers and logged once. Its summary is
// kept all the same (and its advice served from it, its window no longer
// growing) until the watcher no longer lists the group: a read error
// is no sign that the group went (the watcher finds a removed group gone
// at its next read, or by its directory's removal), and dropping the
// summary would lose the demand measured before it.
const UnreadableAfter = 6

// Update takes one report of the watcher (every Interval): it adds the groups that
// appeared, drops those that went (the watcher's report no longer lists them), and
// records their settings. A row with an error (a read that failed while
// the group was there) keeps the container's summary and last settings
// (UnreadableAfter).
func (a *Agent) Update(stats []watch.Stats, at time.Duration) {
	a.catchUpAll() // the report's settings and throttle counts come after the samples held
	seen := make(map[string]bool, len(stats))
	all := make(map[string]bool, len(stats))
	var keep []watch.Stats
	for _, st := range stats {
		all[st.Path] = true
		a.mu.Lock()
		sel := a.selects(st.Identity, st.Path)
		a.mu.Unlock()
		if !sel {
			continue
		}
		if st.Error != "" {
			a.mu.Lock()
			c := a.containers[st.Path]
			if c != nil {
				seen[st.Path] = true // still there: nothing measured is lost
			}
			a.mu.Unlock()
			if c != nil {
				c.mu.Lock()
				if c.errReports++; c.errReports == UnreadableAfter {
					a.cfg.Logger.Warn("container unreadable: its summary is kept until its cgroup goes", "cgroup", st.Path, "reports", c.errReports, "err", st.Error)
				}
				c.mu.Unlock()
			}
			continue // a group never read is added when it is
		}
		keep = append(keep, st)
		seen[st.Path] = true
		a.mu.Lock()
		c := a.containers[st.Path]
		if c == nil {
			c = a.addContainer(st.Path, st.Identity, at)
		}
		a.mu.Unlock()
		c.mu.Lock()
		c.errReports = 0
		if c.view != nil && (!sameCores(c.last.LimitCores, st.LimitCores) || !sameCores(c.last.RequestCores, st.RequestCores) || c.last.BurstCores != st.BurstCores || c.id != st.Identity) {
			c.view, c.advice = nil, nil // settings or names changed: the predictions at "current" too
		}
		c.id, c.last = st.Identity, st
		c.sum.NoteThrottled(at, st.ThrottledPeriods)
		old, usage := c.rt, st.Totals.UsageSeconds
		unchanged := st.UsageCores != nil && runtimeUnchanged(old, c.rtUsageSeconds, usage)
		c.mu.Unlock()
		// The runtime: read when the group is new, again when its
		// processes or the deciding binary changed (an exec); one file and
		// one link a report where the container used CPU since the last
		// check, nothing where it did not, never a sample (runtime.go).
		if !unchanged {
			rt := a.readRuntime(st.Path, old)
			c.mu.Lock()
			if rt != old {
				c.rt, c.view, c.advice = rt, nil, nil
			}
			c.rtUsageSeconds = usage
			c.mu.Unlock()
		}
	}
	a.mu.Lock()
	unreadable := int64(0)
	for p, c := range a.containers {
		c.mu.Lock()
		if c.errReports >= UnreadableAfter {
			unreadable++
		}
		c.mu.Unlock()
		if !seen[p] && c.since < a.reports {
			delete(a.containers, p) // gone: its summary goes with it
			clear(a.byID)
			a.hot.drop(c)
		}
	}
	for p := range a.podGroups {
		if !all[p] {
			delete(a.podGroups, p) // the pod's group went
		}
	}
	for p, since := range a.sandboxes {
		if !all[p] && since < a.reports {
			delete(a.sandboxes, p) // gone (one seen since the last report may not be in this one yet)
		}
	}
	a.reports++
	a.mu.Unlock()
	a.unreadable.Store(unreadable)
	a.collector.Update(keep)
	a.watching.Store(a.w.Unwatched() == nil)
}

func sameCores(a, b *float64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// Report closes the watcher's interval at the last sample, updates the containers
// from it and picks up groups that appeared (Run does it every Interval).
func (a *Agent) Report(at time.Duration) error {
	a.Update(a.w.Report(), at)
	return a.w.Discover()
}

// Drain replays the chunks waiting for the replay worker, here.
func (a *Agent) Drain() {
	for {
		select {
		case j := <-a.replays:
			a.replay(j)
		default:
			return
		}
	}
}
