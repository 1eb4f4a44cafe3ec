// Package cgrouptest makes real cgroups for tests that need the kernel to enforce
// a CPU limit, and skips those tests, saying why, where the host does not allow it.
package cgrouptest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
)

var seq atomic.Int64

// Group is a real cgroup with the cpu controller, made for one test.
type Group struct {
	// Dir is the group's directory.
	Dir string
	// Version is "v1" or "v2": which hierarchy it is in.
	Version string
}

// LimitedGroup makes a cgroup limited to quotaUsec per periodUsec, or skips the
// test if it cannot (not root, no cpu controller, read-only cgroupfs). When the
// test ends it waits until the group holds no process and removes it.
func LimitedGroup(t testing.TB, quotaUsec, periodUsec int) *Group {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("real cgroup test needs root")
	}
	l, err := cgroup.ReadLayout("/")
	if err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	name := fmt.Sprintf("throttlelab-test-%d-%d", os.Getpid(), seq.Add(1))
	g := &Group{Version: l.CPUVersion()}
	switch g.Version {
	case "v1":
		g.Dir = filepath.Join(l.V1["cpu"].MountPoint, name)
	case "v2":
		g.Dir = filepath.Join(l.Unified.MountPoint, name)
	default:
		t.Skip("no cgroup hierarchy has the cpu controller")
	}
	if err := os.Mkdir(g.Dir, 0o755); err != nil {
		t.Skipf("cannot create a cgroup: %v", err)
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(30 * time.Second)
		for len(g.Procs(t)) > 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if err := os.Remove(g.Dir); err != nil {
			t.Errorf("removing test cgroup %s: %v", g.Dir, err)
		}
	})
	if g.Version == "v1" {
		// Period first: a new quota is checked against the current period.
		g.write(t, "cpu.cfs_period_us", strconv.Itoa(periodUsec))
		g.write(t, "cpu.cfs_quota_us", strconv.Itoa(quotaUsec))
	} else {
		g.write(t, "cpu.max", fmt.Sprintf("%d %d", quotaUsec, periodUsec))
	}
	return g
}

func (g *Group) write(t testing.TB, file, v string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(g.Dir, file), []byte(v), 0o644); err != nil {
		t.Fatalf("writing %s: %v", filepath.Join(g.Dir, file), err)
	}
}

// Procs returns the PIDs in the group.
func (g *Group) Procs(t testing.TB) []string {
	b, err := os.ReadFile(filepath.Join(g.Dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// Add moves process pid into the group.
func (g *Group) Add(t testing.TB, pid int) {
	t.Helper()
	g.write(t, "cgroup.procs", strconv.Itoa(pid))
}

// ShellPrefix returns a sh command prefix that moves the shell into the group, so
// that a command it then execs never runs outside it.
func (g *Group) ShellPrefix() string {
	return "echo $$ > '" + filepath.Join(g.Dir, "cgroup.procs") + "' && "
}

// Stat returns the group's cpu.stat as numbers by name (nr_periods,
// nr_throttled, throttled_time or throttled_usec, ...).
func (g *Group) Stat(t testing.TB) map[string]int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(g.Dir, "cpu.stat"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, " "); ok {
			out[k], _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return out
}
