package watch

// A real-kernel test: it makes a cgroup on this host, so run it under the
// host lock (flock /tmp/throttlelab-host.lock go test -run Real ./top).

import (
	"context"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// TestStatByNeedRealThrottled: a real v1 group under a quota of 0.5 CPU,
// throttled in stretches (a spinner for 0.3 s), idle, and near its quota
// (0.45 CPU in 45 ms bursts), watched with Options.StatByNeed on the 100 ms
// grid and hot in turns for 6 s: at every sample the nr_throttled Observe
// gets is at least what cpu.stat said just before the sample (a move the
// rule let pass would leave it behind), the group was throttled, cpu.stat
// was left unread at some samples, and no report found a missed move.
func TestStatByNeedRealThrottled(t *testing.T) {
	if cgrouptest.Require(t).CPUVersion() != "v1" {
		t.Skip("cpu.stat is read by need only on v1, where it is a file apart from the usage")
	}
	grp := cgrouptest.LimitedGroup(t, 50000, 100000)
	dirs := watchtest.WithUsage(t, grp)
	if len(dirs) < 2 {
		t.Skip("cpu and cpuacct are mounted together: one file")
	}
	watchtest.StartShell(t, dirs, `spin() { timeout "$1" sh -c 'while :; do :; done'; }
while :; do spin 0.3; sleep 0.3; for i in 1 2 3 4 5 6; do spin 0.045; sleep 0.055; done; done`)
	path := watchtest.CgroupPath(t, grp.Dir)
	ms := time.Millisecond
	hot := false
	w, observed := watchByNeed(t, path, &hot)
	if w.slack == 0 {
		t.Fatal("no slack: /proc/sys/kernel/sched_cfs_bandwidth_slice_us or the possible CPUs unreadable")
	}
	g := w.groups[path]
	if g == nil || g.counters == nil || g.counters.Usage == nil {
		t.Fatalf("the group %s is not watched with a usage file of its own", path)
	}
	cs := &countingFile{CounterFile: g.counters.Stat}
	g.counters.Stat = cs
	kernel := func() uint64 { return uint64(grp.Stat(t)["nr_throttled"]) }
	var samples, behind int
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	cgroup.Loop(ctx, 10*ms, func(at time.Duration, _ int64) bool {
		if seen, ok := sampleBehind(t, w, at, observed, kernel); seen {
			samples++
			if !ok {
				behind++
			}
		}
		if at%time.Second == 0 && at > 0 {
			before := kernel()
			if st := find(w.Report(), path); st != nil && st.Totals.ThrottledPeriods < before {
				t.Errorf("the report at %s: nr_throttled %d, %d in cpu.stat before it", at, st.Totals.ThrottledPeriods, before)
			}
			hot = !hot
		}
		return behind < 5
	})
	thr := kernel()
	t.Logf("%d samples, cpu.stat read at %d, nr_throttled %d, slack %s", samples, cs.n, thr, w.slack)
	if thr == 0 {
		t.Error("the group was never throttled: the test shows nothing")
	}
	if cs.n >= samples {
		t.Errorf("cpu.stat read at %d of %d samples: never left unread", cs.n, samples)
	}
	if n := w.MissedThrottles(); n != 0 {
		t.Errorf("the reports found %d moves of nr_throttled the rule said could not happen", n)
	}
}

// TestStatByNeedRealQuotaLowered: a real v1 group under a quota of 2
// CPUs, idle, watched with Options.StatByNeed on the 100 ms grid; after
// 1 s its quota is lowered to 0.2 CPU (as an in-place resize writes it),
// a busy loop starts in it 0.2 s later, and no report comes for 2 s: at
// every sample the nr_throttled Observe gets is at least what cpu.stat
// said just before it (the rule, holding the old quota, would leave
// cpu.stat unread: 20 ms a period is far under 2 CPUs less the slack, and
// no throttle was seen before to keep it reading), the group was
// throttled, and the report after finds no missed move.
func TestStatByNeedRealQuotaLowered(t *testing.T) {
	if cgrouptest.Require(t).CPUVersion() != "v1" {
		t.Skip("cpu.stat is read by need only on v1, where it is a file apart from the usage")
	}
	grp := cgrouptest.LimitedGroup(t, 200000, 100000)
	dirs := watchtest.WithUsage(t, grp)
	if len(dirs) < 2 {
		t.Skip("cpu and cpuacct are mounted together: one file")
	}
	path := watchtest.CgroupPath(t, grp.Dir)
	ms := time.Millisecond
	w, observed := watchByNeed(t, path, new(bool))
	if w.slack == 0 || w.events == nil {
		t.Fatalf("no slack (%s) or no inotify (%v)", w.slack, w.eventsErr)
	}
	kernel := func() uint64 { return uint64(grp.Stat(t)["nr_throttled"]) }
	var samples, behind int
	var lowered uint64
	started := false
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cgroup.Loop(ctx, 10*ms, func(at time.Duration, _ int64) bool {
		if at >= time.Second && lowered == 0 {
			lowered = kernel() + 1
			grp.SetQuota(t, 20000)
		}
		if at >= 1200*ms && !started {
			watchtest.Start(t, dirs, true)
			started = true
		}
		if seen, ok := sampleBehind(t, w, at, observed, kernel); seen {
			samples++
			if !ok {
				behind++
			}
		}
		return at < 3*time.Second && behind < 5
	})
	before := kernel()
	if st := find(w.Report(), path); st == nil || st.Totals.ThrottledPeriods < before {
		t.Errorf("the report: %+v, nr_throttled %d in cpu.stat before it", st, before)
	}
	t.Logf("%d samples, nr_throttled %d before the quota was lowered, %d after", samples, lowered-1, before)
	if before < lowered {
		t.Error("the group was never throttled after its quota was lowered: the test shows nothing")
	}
	if n := w.MissedThrottles(); n != 0 {
		t.Errorf("the report found %d moves of nr_throttled the rule said could not happen", n)
	}
}

// watchByNeed watches the group at path alone with Options.StatByNeed on
// the 100 ms grid, hot while *hot: *observed is the nr_throttled Observe
// got for it at the last sample (^0: none). Closed with the test.
func watchByNeed(t *testing.T, path string, hot *bool) (*Watcher, *uint64) {
	t.Helper()
	observed := new(uint64)
	*observed = ^uint64(0)
	self := Identify(path, nil)
	w, err := New(Options{Root: "/", ByNeed: ByNeed{Policy: TestPolicy{
		PicksFn:  func(id Identity) bool { return id == self },
		OnGridFn: func(at time.Duration) bool { return at%(100*time.Millisecond) == 0 },
		ObserveFn: func(s Sample) bool {
			p, throttled := s.Path, s.ThrottledPeriods
			if p == path {
				*observed = throttled
				return *hot
			}
			return false
		},
	}, Stat: true, Coarse: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, observed
}

// sampleBehind samples w at at: seen, that Observe got the group's
// nr_throttled; ok, that it was at least what cpu.stat (kernel) said just
// before the sample (an error otherwise).
func sampleBehind(t *testing.T, w *Watcher, at time.Duration, observed *uint64, kernel func() uint64) (seen, ok bool) {
	t.Helper()
	before := kernel()
	*observed = ^uint64(0)
	w.Sample(at)
	if *observed == ^uint64(0) {
		return false, true
	}
	if *observed < before {
		t.Errorf("at %s: nr_throttled %d observed, %d in cpu.stat before the sample", at, *observed, before)
		return true, false
	}
	return true, true
}
