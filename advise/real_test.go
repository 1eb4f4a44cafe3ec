package advise

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/top/toptest"
)

// TestSampleReal samples a real group holding a busy loop under a 20%
// quota: the samples rise, the group is throttled (so the advice is marked a
// lower bound), and the limit is read back. Shapes only, no timing.
func TestSampleReal(t *testing.T) {
	g := cgrouptest.LimitedGroup(t, 20000, 100000)
	toptest.Start(t, toptest.WithUsage(t, g), true)
	grp, err := FindPath("/", toptest.CgroupPath(t, g.Dir))
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
	a, err := Advise(d, Request{}, Sampled{CPUStat: st})
	if err != nil {
		t.Fatal(err)
	}
	if !a.Recommendation.LowerBound {
		t.Error("throttled while sampled, but the advice is not marked a lower bound")
	}
}

// TestSamplePidGone: a pid that exits while sampled ends sampling with a
// warning naming it, the samples taken before, and advice whose intervals
// are widened.
func TestSamplePidGone(t *testing.T) {
	g := cgrouptest.LimitedGroup(t, 50000, 100000)
	toptest.Start(t, toptest.WithUsage(t, g), false)
	grp, err := FindPath("/", toptest.CgroupPath(t, g.Dir))
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
