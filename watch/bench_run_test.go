package watch

// A real-kernel benchmark: it makes 200 cgroups on this host, so run it under
// the host lock (flock /tmp/throttlelab-host.lock go test ./watch -run X
// -bench RunLockedThread).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/testenv"
)

// BenchmarkRunLockedThread runs the watcher as top and the agent run it
// (Run: every 10 ms, a report every 10 s) on 200 idle real groups limited to
// 1 CPU (with their cpuacct twins where cpuacct is a hierarchy of its own),
// read at every sample, for 30 s sleeping in clock_nanosleep (as Run
// samples) and, in the same run, for 30 s woken by
// a Go ticker on whichever thread the scheduler picks (as it did before),
// and reports the CPU the process used in each
// (getrusage) as a share of one core, and their ratio.
func BenchmarkRunLockedThread(b *testing.B) {
	l := cgrouptest.Require(b)
	prefix := fmt.Sprintf("throttlelab-test-%d-", os.Getpid())
	for range 200 {
		g := cgrouptest.LimitedGroup(b, 100000, 100000)
		if acct, ok := l.V1["cpuacct"]; ok && g.Version == "v1" && acct.MountPoint != l.V1["cpu"].MountPoint {
			twin := filepath.Join(acct.MountPoint, filepath.Base(g.Dir))
			if err := os.Mkdir(twin, 0o755); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { os.Remove(twin) })
		}
	}
	const wall = 30 * time.Second
	run := func(unlocked bool) time.Duration {
		w, err := New(Options{Root: "/", ByNeed: ByNeed{Policy: TestPolicy{
			PicksFn: func(id Identity) bool { return strings.Contains(id.Name, prefix) },
		}}})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		if unlocked {
			w.newWait = tickerWait(w.opts.SampleEvery)
		}
		ctx, cancel := context.WithTimeout(context.Background(), wall)
		defer cancel()
		c0 := testenv.ProcessCPU(b)
		if err := w.Run(ctx, 10*time.Second, func([]Stats) bool { return true }); err != nil {
			b.Fatal(err)
		}
		return testenv.ProcessCPU(b) - c0
	}
	var locked, unlocked time.Duration
	for range b.N {
		locked += run(false)
		unlocked += run(true)
	}
	share := func(d time.Duration) float64 { return float64(d) / float64(time.Duration(b.N)*wall) * 100 }
	b.ReportMetric(share(locked), "locked-core%")
	b.ReportMetric(share(unlocked), "unlocked-core%")
	b.ReportMetric(float64(unlocked)/float64(locked), "unlocked/locked")
}

// tickerWait is the reference of BenchmarkRunLockedThread, what Run did
// before it slept in clock_nanosleep: a wait woken by a Go ticker every
// every, on whichever thread the scheduler picks (it ignores the coarse
// grid).
func tickerWait(every time.Duration) func(ctx context.Context, clock *cgroup.Clock) func() (time.Duration, bool) {
	return func(ctx context.Context, clock *cgroup.Clock) func() (time.Duration, bool) {
		tick := time.NewTicker(every)
		context.AfterFunc(ctx, tick.Stop)
		return func() (time.Duration, bool) {
			select {
			case <-ctx.Done():
				return 0, false
			case <-tick.C:
				return time.Since(clock.Start()), true
			}
		}
	}
}
