package cgroup_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/testenv"
)

// burstyEnv makes the test binary a bursty CPU load instead of running tests
// (TestMain) shaped like an instance of examples/limits.yaml: 5 ms CPU burns
// arriving at random (two threads, each asleep an exponential 45 ms on
// average between burns), about 0.2 cores, so a 0.25-CPU group is throttled
// in some periods and not in others.
const burstyEnv = "THROTTLELAB_TEST_BURSTY"

func TestMain(m *testing.M) {
	if os.Getenv(burstyEnv) != "" {
		bursty()
	}
	os.Exit(m.Run())
}

func bursty() {
	for i := 0; i < 2; i++ {
		go func() {
			runtime.LockOSThread()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))
			for {
				end := time.Now().Add(5 * time.Millisecond)
				for time.Now().Before(end) {
				}
				time.Sleep(time.Duration(rng.ExpFloat64() * float64(45*time.Millisecond)))
			}
		}()
	}
	select {}
}

// TestPeakPeriodReal samples a real 250m-limited group under a bursty load
// every 10 ms, as a run does, and checks the shape of the highest use within
// one of its periods: near the quota, under the rolling 100 ms peak.
func TestPeakPeriodReal(t *testing.T) {
	cgrouptest.Require(t)
	m, err := cgroup.NewManager("/", fmt.Sprintf("peak-%d", os.Getpid()), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Cleanup(true); err != nil {
			t.Error(err)
		}
	})
	set := cgroup.Settings{QuotaUsec: 25000, PeriodUsec: 100000}
	g, err := m.NewGroup("limited", set)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, d := range g.Dirs {
		dirs = append(dirs, d)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", append([]string{"-c", `for d in $DIRS; do echo $$ > "$d/cgroup.procs" || exit 97; done; exec "$0"`, self}, dirs...)...)
	cmd.Env = append(os.Environ(), burstyEnv+"=1", "DIRS="+strings.Join(dirs, " "))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	s, err := cgroup.NewSampler([]*cgroup.Group{g})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tr := cgroup.NewPeakTracker(set.QuotaPeriod(), set.QuotaPeriod())
	tr.SetLimit(set.LimitCores())
	raw := cgroup.NewPeakTracker(set.QuotaPeriod(), set.QuotaPeriod()) // without the limit, for the log
	// The counters are read every millisecond: every tenth millisecond's
	// sample goes to the trackers, as a run samples, and all of them
	// locate each period boundary to a millisecond for the ground truth.
	var samples, fine []cgroup.UsageSample
	next := time.Duration(0)
	ctx, cancel := context.WithCancel(context.Background())
	s.Run(ctx, time.Millisecond, func(u cgroup.UsageSample) {
		fine = append(fine, u)
		if u.At < next {
			return
		}
		next = u.At + 10*time.Millisecond
		samples = append(samples, u)
		pt := cgroup.PeakPoint{At: u.At, UsageNs: uint64(u.Usage[0]), Periods: u.Periods[0], Throttled: u.Throttled[0]}
		tr.Add(pt)
		raw.Add(pt)
		// 40 periods or more, with some of them throttled.
		if u.Periods[0] >= 40 && u.Throttled[0] >= 5 || len(samples) >= 1500 {
			cancel()
		}
	})
	// The most the group surely used within one period: between the first
	// fine sample after a boundary and the last before the next.
	finePts := make([]cgroup.PeakPoint, len(fine))
	for k, u := range fine {
		finePts[k] = cgroup.PeakPoint{At: u.At, UsageNs: uint64(u.Usage[0]), Periods: u.Periods[0], Throttled: u.Throttled[0]}
	}
	surely := surelyWithinPeriod(finePts, set.QuotaPeriod())
	if path := os.Getenv(recordPeakEnv); path != "" {
		if err := writeFine(path, finePts); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d 1 ms reads to %s", len(finePts), path)
	}
	first, last := samples[0], samples[len(samples)-1]
	if last.Throttled[0] < 5 {
		t.Fatalf("the group was throttled in %d of %d periods: the load did not test the boundary", last.Throttled[0], last.Periods[0])
	}
	peak, basis, _, ok := tr.Take()
	rawPeak, _, _, _ := raw.Take()
	mean := float64(last.Usage[0]-first.Usage[0]) / float64(last.At-first.At)
	rolling := 0.0
	for k := range samples {
		for j := k - 1; j >= 0; j-- {
			if d := samples[k].At - samples[j].At; d >= 100*time.Millisecond {
				rolling = max(rolling, float64(samples[k].Usage[0]-samples[j].Usage[0])/float64(d))
				break
			}
		}
	}
	t.Logf("%d periods, %d throttled: peak within a period %.4f cores (%.4f without the limit), rolling 100 ms peak %.4f, mean %.4f; at 1 ms samples the group surely used %.4f cores within one period",
		last.Periods[0], last.Throttled[0], peak, rawPeak, rolling, mean, surely)
	if !ok || basis != cgroup.BasisPeriod {
		t.Fatalf("no period estimate (ok %v, basis %q)", ok, basis)
	}
	// Periods that ended throttled used their whole quota, so the peak is
	// near it, not only above the mean; and it is below the rolling 100 ms
	// peak, which straddles periods. The kernel does not hold a period to
	// its quota exactly: per-CPU runtime slices (5 ms) left from one period
	// are spent in the next, and usage is accounted at scheduler ticks, so
	// one period can hold the quota plus up to a slice per CPU and a tick.
	// The kernel itself lets a period hold more than the quota, so the
	// bound is the quota plus that slack, not the quota
	// (docs/methodology.md).
	slack := float64(cgrouptest.BandwidthSlice()*time.Duration(runtime.NumCPU())+4*time.Millisecond) / float64(100*time.Millisecond)
	bound := 0.25 + slack
	below := peak < rolling
	if testenv.Emulated() {
		// Late ticks under software emulation let a period hold far more
		// (testenv.EmulatedEnv): one period then holds most of a core
		// (0.86 cores under a 250m limit on 6.12, 2026-11-28), so neither
		// the kernel's bound nor "below the rolling peak", which rests on
		// periods held near the quota, is a shape of the kernel there.
		// Both are logged; the bounds from the samples below still hold.
		t.Logf("software-emulated VM: the kernel's per-period bound %.4f and the rolling peak %.4f are not checked", bound, rolling)
		bound = math.Inf(1)
		below = true
	}
	if !below || peak < max(mean, 0.2) || peak > bound {
		t.Errorf("peak within a period %.4f cores: want at least max(the mean %.4f, 0.2), below the rolling 100 ms peak %.4f and at most the quota + a slice per CPU and a tick (%.4f)",
			peak, mean, rolling, 0.25+slack)
	}
	// What the 10 ms samples allow for each stretch between two boundaries:
	// at least the usage strictly inside it, at most the usage including its
	// boundary slots, over the periods counted. The estimate keeps within
	// them (cgroup.PeakTracker), whatever the kernel did; the 1 ms truth is
	// within them too, and the kernel keeps it to the quota plus its slack.
	maxLo, maxHi := 0.0, 0.0
	prev := -1
	for k := 1; k < len(samples); k++ {
		if samples[k].Periods[0] == samples[k-1].Periods[0] {
			continue
		}
		if prev > 0 {
			span := float64(time.Duration(samples[k].Periods[0]-samples[prev].Periods[0]) * set.QuotaPeriod())
			if k-1 >= prev {
				maxLo = max(maxLo, float64(samples[k-1].Usage[0]-samples[prev].Usage[0])/span)
			}
			maxHi = max(maxHi, float64(samples[k].Usage[0]-samples[prev-1].Usage[0])/span)
		}
		prev = k
	}
	t.Logf("the 10 ms samples allow %.4f to %.4f cores in the busiest stretch", maxLo, maxHi)
	if surely > bound || surely > maxHi+1e-9 || peak < maxLo-1e-9 || peak > maxHi+1e-9 {
		t.Errorf("at 1 ms samples the group surely used %.4f cores within one period, the 10 ms estimate is %.4f: want the truth at most %.4f, both within what the 10 ms samples allow (%.4f to %.4f)",
			surely, peak, 0.25+slack, maxLo, maxHi)
	}
}
