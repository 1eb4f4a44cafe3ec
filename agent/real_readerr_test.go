package agent

// A real-kernel test: it makes a cgroup on this host, so run it under the
// host lock (flock /tmp/throttlelab-host.lock go test ./agent -run Real).

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/watch"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// failingFile fails its reads with EBUSY while fail is set: a transient
// error of a group that is still there.
type failingFile struct {
	cgroup.CounterFile
	fail *atomic.Bool
}

func (f failingFile) Read() ([]byte, error) {
	if f.fail.Load() {
		return nil, syscall.EBUSY
	}
	return f.CounterFile.Read()
}

// TestRealAgentKeepsSummaryOverReadErrors: a real group with a busy loop
// under a limit, summarised for 3 s; then every read of its counter files
// fails (EBUSY) for 2 s, over two reports; then they work again. The
// container must keep its summary (the same one, not started anew) through
// the reports with the error, the failed reads must be counted, its window
// must grow again after; and once the group is removed for real, the next
// report must drop it.
func TestRealAgentKeepsSummaryOverReadErrors(t *testing.T) {
	grp := cgrouptest.LimitedGroup(t, 50000, 100000)
	var dirs []string
	for _, d := range watchtest.WithUsage(t, grp) {
		c := filepath.Join(d, "c")
		if err := os.Mkdir(c, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, c)
	}
	removed := false
	remove := func() {
		for _, d := range dirs {
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				err := os.Remove(d)
				if err == nil || os.IsNotExist(err) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("removing %s: %v", d, err)
				}
			}
		}
	}
	var join strings.Builder
	for _, d := range dirs {
		join.WriteString("echo $$ > '" + filepath.Join(d, "cgroup.procs") + "' && ")
	}
	spin := exec.Command("sh", "-c", join.String()+"while :; do :; done")
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() { spin.Process.Kill(); spin.Wait() }
	t.Cleanup(func() {
		if !removed {
			stop()
			remove()
		}
	})
	path := watchtest.CgroupPath(t, dirs[0])
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if b, _ := os.ReadFile(filepath.Join(dirs[0], "cgroup.procs")); len(strings.TrimSpace(string(b))) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the busy loop never joined its group")
		}
	}

	var fail atomic.Bool
	self := watch.Identify(path, nil)
	// NoPerCPU: a hot group's usage is read through its counter files
	// (else through its per-CPU reader, which fails apart)
	a, err := New(Config{Root: "/", Node: "this-host", Interval: time.Second, NoPerCPU: true,
		Select:  func(id watch.Identity) bool { return id == self },
		Summary: SummaryConfig{Window: 20 * time.Second, Block: 2 * time.Second, Chunk: time.Second},
		open: func(p string, size int) (cgroup.CounterFile, error) {
			f, err := cgroup.OpenCounterFile(p, size)
			if err != nil || !strings.HasPrefix(p, dirs[0]+"/") && (len(dirs) < 2 || !strings.HasPrefix(p, dirs[1]+"/")) {
				return f, err
			}
			return failingFile{f, &fail}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	state := func() (c *container, span time.Duration, errReports int) {
		a.mu.Lock()
		c = a.containers[path]
		a.mu.Unlock()
		if c != nil {
			c.mu.Lock()
			span, _ = c.sum.Span()
			errReports = c.errReports
			c.mu.Unlock()
		}
		return c, span, errReports
	}

	var first *container
	var before time.Duration
	errorRows := 0
	ms := time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cgroup.Loop(ctx, 10*ms, func(at time.Duration, _ int64) bool {
		switch at {
		case 3050 * ms:
			fail.Store(true)
		case 5050 * ms:
			fail.Store(false)
		}
		a.Sample(at)
		if at%time.Second != 0 || at == 0 {
			return true
		}
		if err := a.Report(at); err != nil {
			t.Fatal(err)
		}
		a.Drain()
		c, span, errs := state()
		switch s := at / time.Second; {
		case s == 3:
			if c == nil || span <= 0 {
				t.Fatalf("after 3 s the container is %v with %s of demand", c, span)
			}
			first, before = c, span
		case s == 4 || s == 5:
			if c != first {
				t.Fatalf("at %s, while its reads fail, the container is %p (was %p): its summary was dropped", at, c, first)
			}
			if span < before {
				t.Errorf("at %s the summary holds %s, held %s", at, span, before)
			}
			if errs > 0 {
				errorRows++
			}
		case s == 7:
			if c != first {
				t.Fatalf("at %s, its reads working again, the container is %p (was %p)", at, c, first)
			}
			if span <= before || errs != 0 {
				t.Errorf("at %s the summary holds %s (%s before the errors), %d error reports in a row", at, span, before, errs)
			}
			// the group goes for real: the next report drops it
			stop()
			remove()
			removed = true
		case s == 8:
			if c != nil {
				t.Errorf("at %s, its cgroup removed, the container is still summarised", at)
			}
			return false
		}
		return true
	})
	if first == nil {
		t.Fatal("the loop ended before the container was summarised")
	}
	if errorRows == 0 {
		t.Error("no report had an error row for the group: the test shows nothing")
	}
	if n := a.w.ReadErrors(); n == 0 {
		t.Error("no failed read counted")
	} else {
		t.Logf("%d failed reads counted, %d reports with an error row", n, errorRows)
	}
}
