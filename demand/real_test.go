package demand

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// TestSampleReal samples a real group holding a busy loop under a 20%
// quota: the samples rise, the group is throttled (so the advice is marked a
// lower bound or rebuilt), and the limit is read back. Shapes only, no timing.
func TestSampleReal(t *testing.T) {
	g := cgrouptest.LimitedGroup(t, 20000, 100000)
	watchtest.Start(t, watchtest.WithUsage(t, g), true)
	grp, err := FindPath("/", watchtest.CgroupPath(t, g.Dir))
	if err != nil {
		t.Fatal(err)
	}
	if got := grp.LimitMilli(); got != 200 {
		t.Errorf("limit read back as %dm, want 200m", got)
	}
	d, st, err := Sample(context.Background(), grp, 500*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.At) < 5 || d.Work() <= 0 {
		t.Fatalf("%d samples, %s of work: want several and some work", len(d.At), d.Work())
	}
	if st.Periods == 0 || st.ThrottledPeriods == 0 {
		t.Errorf("cpu.stat delta %+v: a busy loop under 20%% must be throttled", st)
	}
	a, err := advise.Advise(d, advise.Request{}, advise.Sampled{CPUStat: st})
	if err != nil {
		t.Fatal(err)
	}
	// Throttled in every period, the use shows nothing above the limit: a
	// lower bound. When a busy machine lets the loop sit out a period, the
	// streaks are short enough to move and the demand is rebuilt instead
	// (it failed once so under go test ./...). Either way the advice says
	// the limit shaped what was sampled.
	if r := a.Recommendation; !r.LowerBound && !r.Reconstructed {
		t.Errorf("throttled while sampled, but the advice is neither a lower bound nor rebuilt (moved %s, capped %s)", d.Moved, d.Capped)
	}
}

// TestSamplePidGone: a pid that exits while sampled ends sampling with a
// warning naming it, the samples taken before, and advice whose intervals
// are widened.
func TestSamplePidGone(t *testing.T) {
	g := cgrouptest.LimitedGroup(t, 50000, 100000)
	watchtest.Start(t, watchtest.WithUsage(t, g), false)
	grp, err := FindPath("/", watchtest.CgroupPath(t, g.Dir))
	if err != nil {
		t.Fatal(err)
	}
	grp.Pid = 999999 // no such process: as if it had exited
	d, _, err := Sample(context.Background(), grp, time.Second, nil)
	if err != nil {
		t.Fatalf("sampling for a pid that is gone: %v, want the samples so far and a warning", err)
	}
	if len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], "pid 999999 exited") {
		t.Fatalf("warnings %q: want one naming pid 999999", d.Warnings)
	}
}

// TestSampleGroupGoneReal: a group removed while sampled (a pod replaced)
// ends sampling with the samples taken before and a warning naming it, not
// an error that loses them (advise --save-csv then still writes them).
func TestSampleGroupGoneReal(t *testing.T) {
	g := cgrouptest.LimitedGroup(t, 50000, 100000)
	dirs := watchtest.WithUsage(t, g) // no process in it: an empty group can be removed
	grp, err := FindPath("/", watchtest.CgroupPath(t, g.Dir))
	if err != nil {
		t.Fatal(err)
	}
	removed := false
	d, _, err := Sample(context.Background(), grp, time.Minute, func(done time.Duration) {
		if done < 200*time.Millisecond || removed {
			return
		}
		for _, dir := range dirs {
			if err := os.Remove(dir); err != nil {
				t.Errorf("removing %s while sampled: %v", dir, err)
			}
		}
		removed = true
	})
	if !removed {
		t.Fatal("sampling ended before the group was removed")
	}
	if err != nil {
		t.Fatalf("sampling a group removed after 200 ms: %v, want the samples so far and a warning", err)
	}
	if len(d.At) < 20 {
		t.Errorf("%d samples kept, want the 20 or more taken before the removal", len(d.At))
	}
	if len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], "was removed after") || !strings.Contains(d.Warnings[0], grp.Path) {
		t.Fatalf("warnings %q: want one saying the group %s was removed", d.Warnings, grp.Path)
	}
}

// TestSampleRealBurstsUnderLimit: a process that asks for 50 ms of CPU
// every 350 ms of sleep, sampled under 200m, is spread by the limit to 20 ms
// a period; replayed as used, 300m would look unthrottled. Reconstructed
// from the throttling counters, the demand is throttled at 300m. (The
// kernel's count at 300m is not asserted: on a busy machine others' load
// spreads the bursts as a limit would, and the count falls; make e2e-fleet
// measures predicted against counted.) Shapes only, no times.
func TestSampleRealBurstsUnderLimit(t *testing.T) {
	g := cgrouptest.LimitedGroup(t, 20000, 100000)
	startBursts(t, g, 1, 50*time.Millisecond, 350*time.Millisecond, "")
	grp, err := FindPath("/", watchtest.CgroupPath(t, g.Dir))
	if err != nil {
		t.Fatal(err)
	}
	d, st, err := Sample(context.Background(), grp, 3*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.ThrottledPeriods == 0 {
		t.Fatalf("cpu.stat delta %+v: 50 ms bursts under 20 ms a period must be throttled", st)
	}
	if len(d.Warnings) == 0 || !strings.Contains(strings.Join(d.Warnings, " "), "reconstructed from its throttling counters") {
		t.Errorf("warnings %q: want the reconstruction named", d.Warnings)
	}
	evs, err := advise.Evaluate(d, []advise.Point{{LimitMilli: 300, Period: 100 * time.Millisecond}}, advise.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].ThrottledRatio < 0.1 {
		t.Errorf("reconstructed demand throttled %.3f at 300m: the bursts were not recovered", evs[0].ThrottledRatio)
	}
}
