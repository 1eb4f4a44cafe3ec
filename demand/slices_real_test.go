package demand

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// TestSliceModelReal replays two bursty processes sampled under a real
// 600m group, pinned to one CPU and then free on two, at that limit with
// and without the per-CPU split, beside the kernel's own count (the
// self-audit): on one CPU the per-CPU counters see one CPU and the two
// replays agree; on two they see two. The figures are logged (docs/advise.md
// has a measured table); the assertions are shapes.
func TestSliceModelReal(t *testing.T) {
	for _, cpus := range []string{"0", "0,1"} {
		t.Run("cpus="+cpus, func(t *testing.T) {
			g := cgrouptest.LimitedGroup(t, 60000, 100000)
			startBursts(t, g, 2, 30*time.Millisecond, 45*time.Millisecond, cpus)
			grp, err := FindPath("/", watchtest.CgroupPath(t, g.Dir))
			if err != nil {
				t.Fatal(err)
			}
			d, st, err := Sample(context.Background(), grp, 5*time.Second, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d.PerCPU == nil {
				t.Skip("no per-CPU counters for this group (cgroup v2 or no cpuacct)")
			}
			p := advise.Point{LimitMilli: 600, Period: 100 * time.Millisecond}
			slices, err := advise.AuditAt(d, p, st, advise.Options{})
			if err != nil || slices == nil {
				t.Fatalf("audit: %v, %v (%+v)", slices, err, st)
			}
			flat := *d
			flat.PerCPU, flat.Cores = nil, int(d.Bound())
			fluid, err := advise.AuditAt(&flat, p, st, advise.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("cpus %s: ran on %d CPUs (%d at once); kernel %.3f (%d of %d); slice replay %.3f, fluid %.3f",
				cpus, d.CPUsUsed(), d.CPUsAtOnce(), slices.Measured, st.ThrottledPeriods, st.Periods, slices.Predicted, fluid.Predicted)
			want := strings.Count(cpus, ",") + 1
			if got := d.CPUsUsed(); got != want {
				t.Errorf("ran on %d CPUs by the per-CPU counters, want %d", got, want)
			}
			if want == 1 && slices.Predicted != fluid.Predicted {
				t.Errorf("on one CPU the slice replay %.3f differs from the fluid %.3f", slices.Predicted, fluid.Predicted)
			}
		})
	}
}
