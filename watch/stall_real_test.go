package watch_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/testenv"
	"github.com/throttlelab/throttlelab/watch"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// TestStallSplitReal checks the shape of the stall's split on the kernel:
// a group throttled alone on its CPU stalls mostly for its quota, a group
// without a quota crowded by a neighbour on its CPU only for contention.
// It needs the cpu controller on cgroup v2 (PSI beside the quota); make
// test runs it in its v2 VMs (vmtest.Suites).
func TestStallSplitReal(t *testing.T) {
	throttledDir, crowdedDir := watchtest.StallGroups(t)
	w, err := watch.New(watch.Options{Root: "/"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	stats := oneReport(t, w, 2*time.Second)
	thr := find(stats, watchtest.CgroupPath(t, throttledDir))
	cr := find(stats, watchtest.CgroupPath(t, crowdedDir))
	if thr == nil || cr == nil {
		t.Fatalf("the test groups are not among the %d groups reported", len(stats))
	}
	for _, s := range []*watch.Stats{thr, cr} {
		if s.StallSplit != watch.StallSplitPSI || s.StallQuotaRatio == nil || s.StallContentionRatio == nil || s.Totals.StallQuotaSeconds == nil {
			t.Fatalf("%s: stall split %q (%v, %v): want it known on v2", s.Path, s.StallSplit, s.StallQuotaRatio, s.StallContentionRatio)
		}
		t.Logf("%s: usage %.3f, throttled %.3f s/s, some %.3f, quota %.3f, contention %.3f",
			s.Path, *s.UsageCores, s.ThrottledSecondsPerSecond, *s.PressureSomeRatio, *s.StallQuotaRatio, *s.StallContentionRatio)
	}
	if q, c := *thr.StallQuotaRatio, *thr.StallContentionRatio; q <= c || thr.ThrottledSecondsPerSecond <= 0 {
		t.Errorf("the group throttled alone: quota %.3f, contention %.3f, throttled %.3f s/s: want the quota to be most of its stall", q, c, thr.ThrottledSecondsPerSecond)
	}
	if q, c := *cr.StallQuotaRatio, *cr.StallContentionRatio; q != 0 || c <= 0 {
		t.Errorf("the crowded group without a quota: quota %.3f, contention %.3f: want contention only", q, c)
	}
}

// TestStallSplitWherePSIReal checks where the split is known, on whichever
// layout the host has: a throttled group's split is known, with a quota
// share, where a v2 group of its path has cpu.pressure (the group itself
// on v2; on a host with the cpu controller on v1, its twin in the v2
// mount, made here), and unknown where there is none (a group without a
// twin, on v1).
func TestStallSplitWherePSIReal(t *testing.T) {
	l := cgrouptest.Require(t)
	throttled := cgrouptest.LimitedGroup(t, 20000, 100000)
	other := cgrouptest.LimitedGroup(t, 20000, 100000)
	dirs := watchtest.WithUsage(t, throttled)
	v1 := l.CPUVersion() == "v1"
	if v1 && l.Unified != nil {
		rel, ok := strings.CutPrefix(watchtest.CgroupPath(t, throttled.Dir), strings.TrimSuffix(l.Unified.Root, "/"))
		if !ok {
			t.Fatalf("%s is not under the v2 mount's root %s", throttled.Dir, l.Unified.Root)
		}
		twin := filepath.Join(l.Unified.MountPoint, rel)
		if err := os.Mkdir(twin, 0o755); err != nil {
			t.Fatalf("making the v2 twin of %s: %v", throttled.Dir, err)
		}
		t.Cleanup(func() {
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if err := os.Remove(twin); err == nil || os.IsNotExist(err) {
					return
				}
			}
			t.Errorf("removing %s: still busy", twin)
		})
		if _, err := os.Stat(filepath.Join(twin, "cpu.pressure")); err != nil {
			testenv.Unavailable(t, "the v2 mount has no cpu.pressure (a kernel without PSI, or booted with psi=0): %v", err)
		}
		dirs = append(dirs, twin)
	}
	watchtest.Start(t, dirs, true)
	watchtest.Start(t, watchtest.WithUsage(t, other), true)

	w, err := watch.New(watch.Options{Root: "/"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	stats := oneReport(t, w, 2*time.Second)
	thr := find(stats, watchtest.CgroupPath(t, throttled.Dir))
	oth := find(stats, watchtest.CgroupPath(t, other.Dir))
	if thr == nil || oth == nil {
		t.Fatalf("the test groups are not among the %d groups reported", len(stats))
	}
	if !v1 || l.Unified != nil {
		if thr.StallSplit != watch.StallSplitPSI || thr.StallQuotaRatio == nil || *thr.StallQuotaRatio <= 0 {
			t.Errorf("throttled group with cpu.pressure (%s): split %q, quota %v: want a quota share", l.Mode, thr.StallSplit, thr.StallQuotaRatio)
		} else {
			t.Logf("throttled group (%s): throttled %.3f s/s, some %.3f, quota %.3f, contention %.3f",
				l.Mode, thr.ThrottledSecondsPerSecond, *thr.PressureSomeRatio, *thr.StallQuotaRatio, *thr.StallContentionRatio)
		}
	}
	if v1 && l.Unified == nil && thr.StallSplit != watch.StallSplitUnknown {
		t.Errorf("v1 without a v2 mount: split %q, want it unknown", thr.StallSplit)
	}
	if v1 && (oth.StallSplit != watch.StallSplitUnknown || oth.StallQuotaRatio != nil || oth.StallContentionRatio != nil || oth.Totals.StallQuotaSeconds != nil) {
		t.Errorf("v1 group without a v2 twin: split %q (%v, %v): want it unknown", oth.StallSplit, oth.StallQuotaRatio, oth.StallContentionRatio)
	}
	if !v1 && oth.StallSplit != watch.StallSplitPSI {
		t.Errorf("v2 group: split %q, want it known", oth.StallSplit)
	}
}
