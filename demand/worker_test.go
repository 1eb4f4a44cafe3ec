package demand

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// workerEnv, when set, makes the test binary run as a load (runWorker)
// instead of running the tests: the real-kernel tests start it in a cgroup
// of its own, which the guest of the VM matrix can do without python or go.
const workerEnv = "THROTTLELAB_DEMAND_WORKER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(workerEnv); spec != "" {
		if err := runWorker(spec); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(2)
		}
		return
	}
	os.Exit(m.Run())
}

// workerSpec is the load a worker runs: Threads threads, each locked to an
// OS thread and busy for a stretch of thread CPU time drawn uniformly from
// [BusyMin, BusyMax], starting one every interval drawn uniformly from
// [Every/2, 3 Every/2] on a schedule of its own (a stretch that could not
// start on time, because its thread was throttled or waited for the CPU,
// starts at once: the load asks for the same CPU time under a limit as
// without one, as the replay assumes). Seed seeds each thread's RNG.
type workerSpec struct {
	Threads                 int
	BusyMin, BusyMax, Every time.Duration
	Seed                    uint64
}

// String is the spec as runWorker reads it: "2 1ms 3ms 10ms 1".
func (s workerSpec) String() string {
	return fmt.Sprintf("%d %s %s %s %d", s.Threads, s.BusyMin, s.BusyMax, s.Every, s.Seed)
}

// parseWorkerSpec parses String's form.
func parseWorkerSpec(v string) (workerSpec, error) {
	f := strings.Fields(v)
	var s workerSpec
	if len(f) != 5 {
		return s, fmt.Errorf("worker spec %q: want THREADS BUSYMIN BUSYMAX EVERY SEED", v)
	}
	var err error
	if s.Threads, err = strconv.Atoi(f[0]); err != nil || s.Threads < 1 {
		return s, fmt.Errorf("worker spec %q: threads %q: want a whole number of 1 or more", v, f[0])
	}
	for i, p := range []*time.Duration{&s.BusyMin, &s.BusyMax, &s.Every} {
		if *p, err = time.ParseDuration(f[1+i]); err != nil || *p <= 0 {
			return s, fmt.Errorf("worker spec %q: duration %q: want a positive duration such as 3ms", v, f[1+i])
		}
	}
	if s.BusyMax < s.BusyMin {
		return s, fmt.Errorf("worker spec %q: busy range %s-%s: want the lower end first", v, s.BusyMin, s.BusyMax)
	}
	if s.Seed, err = strconv.ParseUint(f[4], 10, 64); err != nil {
		return s, fmt.Errorf("worker spec %q: seed %q: want a whole number", v, f[4])
	}
	return s, nil
}

// runWorker runs the load spec names until the process is killed.
func runWorker(spec string) error {
	s, err := parseWorkerSpec(spec)
	if err != nil {
		return err
	}
	// Every thread holds a P of its own, so that the kernel, not Go's
	// scheduler, shares the CPUs between them (pinned to one CPU, Go would
	// otherwise run one P).
	runtime.GOMAXPROCS(s.Threads + 2)
	for i := range s.Threads {
		go func() {
			runtime.LockOSThread()
			rng := rand.New(rand.NewPCG(s.Seed, uint64(i)))
			next := time.Now()
			for {
				busy := s.BusyMin + time.Duration(rng.Int64N(int64(s.BusyMax-s.BusyMin)+1))
				spinThreadCPU(busy)
				next = next.Add(s.Every/2 + time.Duration(rng.Int64N(int64(s.Every)+1)))
				// The load's schedule, not synchronisation: the next
				// stretch starts at its instant, or at once when late.
				time.Sleep(time.Until(next))
			}
		}()
	}
	select {}
}

// sink keeps the busy loop's arithmetic from being optimised away.
var sink float64

// spinThreadCPU keeps the calling (locked) thread busy until it has run
// for d of its own CPU time.
func spinThreadCPU(d time.Duration) {
	start := threadCPU()
	x := sink
	for threadCPU()-start < d {
		for range 2000 {
			x = x*1.0000001 + 1e-9
		}
	}
	sink = x
}

// threadCPU is the calling thread's CPU time.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err) // the clock exists on every Linux the tests run on
	}
	return time.Duration(ts.Nano())
}

func TestParseWorkerSpec(t *testing.T) {
	want := workerSpec{Threads: 2, BusyMin: time.Millisecond, BusyMax: 3 * time.Millisecond, Every: 10 * time.Millisecond, Seed: 7}
	got, err := parseWorkerSpec(want.String())
	if err != nil || got != want {
		t.Fatalf("parse(%q) = %+v, %v; want %+v", want.String(), got, err, want)
	}
	for _, bad := range []string{"", "0 1ms 3ms 10ms 1", "2 3ms 1ms 10ms 1", "2 1ms 3ms soon 1", "2 1ms 3ms 10ms -1"} {
		if _, err := parseWorkerSpec(bad); err == nil {
			t.Errorf("parse(%q): no error", bad)
		}
	}
}
