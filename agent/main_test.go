package agent

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/throttlelab/throttlelab/server"
	"github.com/throttlelab/throttlelab/units"
)

// TestMain runs the tests, or, with THROTTLELAB_TEST_LOAD set, the load
// helper of BenchmarkAgentRealRunBusy, or, with pairedEnv set, an agent
// process of BenchmarkAgentRealIdlePaired, or, with serveEnv set, the
// workload server of TestRealAgentPredictsAHigherLimit.
func TestMain(m *testing.M) {
	if list := os.Getenv("THROTTLELAB_TEST_LOAD"); list != "" {
		if err := runLoad(list); err != nil {
			fmt.Fprintln(os.Stderr, "load helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if mode := os.Getenv(pairedEnv); mode != "" {
		if err := runPairedAgent(mode); err != nil {
			fmt.Fprintln(os.Stderr, "agent process:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv(serveEnv) != "" {
		if err := runServer(); err != nil {
			fmt.Fprintln(os.Stderr, "server helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveEnv makes the test binary the workload server (runServer).
const serveEnv = "THROTTLELAB_TEST_SERVE"

// runServer runs the workload server as throttlelab serve --gomaxprocs 2
// --listen 127.0.0.1:0 runs it (its burn calibrated at start-up), printing
// its address on its first line, until its standard input closes (or
// after 10 minutes).
func runServer() error {
	policy, err := units.FixedGOMAXPROCS(2)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	go func() {
		bufio.NewReader(os.Stdin).ReadString('\n') // EOF when the test closes it
		cancel()
	}()
	p := server.Process{Name: "burner", Listen: "127.0.0.1:0", GOMAXPROCS: policy, MaxInflight: server.DefaultMaxInflight,
		MaxCPU: server.DefaultMaxCPU, Grace: time.Second}
	return p.Run(ctx, os.Stdout, slog.New(slog.NewTextHandler(os.Stderr, nil)))
}

// runLoad puts one thread in each line's groups (a busy time, optionally
// "/" and a cycle, 100 ms by default, then tab-separated v1 directories:
// the thread's ID is written to each one's tasks file), which runs for
// that time every cycle, staggered over it, says "ready" once every thread
// is in, and returns when its standard input closes (or after 10 minutes).
func runLoad(list string) error {
	b, err := os.ReadFile(list)
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var joined sync.WaitGroup
	errs := make(chan error, len(lines))
	for i, l := range lines {
		joined.Add(1)
		go func() {
			runtime.LockOSThread() // this thread stays in the groups; it ends with the process
			tid := strconv.Itoa(unix.Gettid())
			f := strings.Split(l, "\t")
			spec, cycleSpec, ok := strings.Cut(f[0], "/")
			busy, err := time.ParseDuration(spec)
			if err != nil {
				errs <- err
			}
			cycle := 100 * time.Millisecond
			if ok {
				if cycle, err = time.ParseDuration(cycleSpec); err != nil {
					errs <- err
				}
			}
			for _, d := range f[1:] {
				if err := os.WriteFile(d+"/tasks", []byte(tid), 0o644); err != nil {
					errs <- err
				}
			}
			joined.Done()
			time.Sleep(time.Duration(i) * cycle / time.Duration(len(lines)))
			for {
				t0 := time.Now()
				for time.Since(t0) < busy {
				}
				time.Sleep(cycle - time.Since(t0))
			}
		}()
	}
	joined.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	fmt.Println("ready")
	done := make(chan struct{})
	go func() {
		bufio.NewReader(os.Stdin).ReadString('\n') // EOF when the benchmark closes it
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Minute):
	}
	return nil
}
