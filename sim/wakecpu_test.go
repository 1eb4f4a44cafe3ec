package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/record"
)

// TestWakeCPUFromRun: a replay takes the Go runtime's CPU per wake-up from
// the measured run (what the instances' groups used beyond their handlers):
// 0.91 ms in the pod-limit runs of 2026-11-29, where the default is 0.3 ms;
// a closed loop, whose servers seldom wait idle, keeps the default.
func TestWakeCPUFromRun(t *testing.T) {
	r, err := ReplayOf("testdata/real/pod-limit", DefaultCosts())
	if err != nil {
		t.Fatal(err)
	}
	if w := r.Costs.WakeCPU; w < 850*time.Microsecond || w > 950*time.Microsecond {
		t.Errorf("pod-limit: wake-up CPU %v, want the runs' 0.91 ms", w)
	}
	r, err = ReplayOf("testdata/real/tiles-closed", DefaultCosts())
	if err != nil {
		t.Fatal(err)
	}
	if w := r.Costs.WakeCPU; w != DefaultCosts().WakeCPU {
		t.Errorf("tiles-closed (a closed loop): wake-up CPU %v, want the default %v", w, DefaultCosts().WakeCPU)
	}
}

// TestWakeCPUArithmetic: 200 requests of 5 ms of handler CPU every 10 ms
// to one instance, answered in 6 ms, whose group used 0.8 ms more per
// wake-up than the handlers and the idle background (0.005 cores over each
// 10 ms between arrivals): the first request finds no idle spell, the 199
// others one of 4 ms. Sent every 6.5 ms instead (idle 0.5 ms), none wakes
// the server and the default stays.
func TestWakeCPUArithmetic(t *testing.T) {
	c := DefaultCosts()
	for _, tc := range []struct {
		every time.Duration
		want  time.Duration
		ok    bool
	}{{10 * time.Millisecond, 800 * time.Microsecond, true}, {6500 * time.Microsecond, 0, false}} {
		dir := t.TempDir()
		run := &record.Run{ID: "x/load0/r1", Seconds: 2}
		var csv strings.Builder
		csv.WriteString("seq,intended_ns,start_ns,latency_ns,target,instance,status,bytes,error,server_queue_ns,server_cpu_ns,server_wall_ns,tile,step,worker,waited,throttled_ns\n")
		used := 0.0
		for i := 0; i < 200; i++ {
			at := time.Duration(i) * tc.every
			fmt.Fprintf(&csv, "%d,%d,%d,%d,0,a,200,51,,0,%d,%d,\"\",0,0,0,-1\n", i, at, at, 6*time.Millisecond, 5*time.Millisecond, 5500*time.Microsecond)
			used += float64(5 * time.Millisecond)
			if i > 0 {
				used += c.Background*float64(tc.every) + float64(800*time.Microsecond)
			}
		}
		run.Usage = map[string]record.UsageStats{"a": {Mean: used / 2e9}}
		rd := record.RunIDDir(dir, run.ID)
		if err := os.MkdirAll(rd, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(rd, record.RequestsFile), []byte(csv.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		got, ok, err := wakeCPU([]*record.Run{run}, func(int) ([]loadgen.Record, error) { return record.ReadRequests(rd) }, c)
		if err != nil {
			t.Fatal(err)
		}
		if ok != tc.ok || tc.ok && (got < tc.want-time.Microsecond || got > tc.want+time.Microsecond) {
			t.Errorf("every %v: wake-up CPU %v (taken: %v), want %v (taken: %v)", tc.every, got, ok, tc.want, tc.ok)
		}
	}
}

// TestPodLimitGroupCPU: replayed with the runs' own wake-up CPU, the pod's
// group uses what the measured one used and is throttled in as many
// periods; with the default it uses 7% less and is throttled in half as
// many, which is what left the simulated p99 a third short.
func TestPodLimitGroupCPU(t *testing.T) {
	const dir = "testdata/real/pod-limit"
	r, err := ReplayOf(dir, DefaultCosts())
	if err != nil {
		t.Fatal(err)
	}
	measured := podGroups(t, dir, r.Measured)
	for _, tc := range []struct {
		name string
		wake time.Duration
		ok   bool
	}{{"measured wake-up CPU", r.Costs.WakeCPU, true}, {"default wake-up CPU", DefaultCosts().WakeCPU, false}} {
		opt := r.Options(0)
		opt.Costs.WakeCPU = tc.wake
		out := t.TempDir()
		simulated, _, err := simRun(r.Experiment, out, opt)
		if err != nil {
			t.Fatal(err)
		}
		sim := podGroups(t, out, simulated)
		use, throttled := sim.use/measured.use, float64(sim.throttled)/float64(measured.throttled)
		t.Logf("%s: pod group used %.3f of the measured CPU, throttled in %d periods against %d", tc.name, use, sim.throttled, measured.throttled)
		if ok := use > 0.97 && use < 1.03 && throttled > 0.8 && throttled < 1.25; ok != tc.ok {
			t.Errorf("%s: use ratio %.3f, throttled ratio %.2f: within 3%% and 25%%: %v, want %v", tc.name, use, throttled, ok, tc.ok)
		}
	}
}

type podTotals struct {
	use       float64 // CPU-seconds
	throttled uint64
}

// podGroups sums the pod-group.json of the runs with a pod block.
func podGroups(t *testing.T, dir string, runs []*record.Run) podTotals {
	t.Helper()
	var s podTotals
	n := 0
	for _, r := range runs {
		b, err := os.ReadFile(filepath.Join(record.RunIDDir(dir, r.ID), record.PodGroupFile))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var pg record.PodGroup
		if err := json.Unmarshal(b, &pg); err != nil {
			t.Fatal(err)
		}
		s.use += pg.UsageCores * pg.WindowSec
		s.throttled += pg.CPUStat.ThrottledPeriods
		n++
	}
	if n == 0 || s.throttled == 0 {
		t.Fatalf("%s: %d pod groups, throttled in %d periods: nothing to compare", dir, n, s.throttled)
	}
	return s
}
