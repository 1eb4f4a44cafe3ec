// Package cgrouptest makes real cgroups for tests that need the kernel to enforce
// a CPU limit, and skips those tests, saying why, where the host does not allow it.
package cgrouptest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/testenv"

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

// Require returns the host's cgroup layout if real-cgroup tests can run here:
// as root, with a cpu controller. Elsewhere it skips the test and says why,
// except in CI (CI set), where a real-cgroup test that cannot run fails.
func Require(t testing.TB) *cgroup.Layout {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "real cgroup test needs root")
	}
	l, err := cgroup.ReadLayout("/")
	if err != nil {
		Unavailable(t, "no cgroups here: %v", err)
	}
	if l.CPUVersion() == "" {
		Unavailable(t, "no cgroup hierarchy has the cpu controller")
	}
	return l
}

// Unavailable ends a test that needs something the host lacks: a skip that
// says why, or in CI a failure.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	testenv.Unavailable(t, format, args...)
}

// LimitedGroup makes a cgroup limited to quotaUsec per periodUsec, or skips the
// test if it cannot (see Require). When the test ends it waits until the group
// holds no process and removes it. On v2 it enables the cpu controller at the
// hierarchy's root if it has to, and disables it again after.
func LimitedGroup(t testing.TB, quotaUsec, periodUsec int) *Group {
	t.Helper()
	l := Require(t)
	name := fmt.Sprintf("throttlelab-test-%d-%d", os.Getpid(), seq.Add(1))
	g := &Group{Version: l.CPUVersion()}
	if g.Version == "v1" {
		g.Dir = filepath.Join(l.V1["cpu"].MountPoint, name)
	} else {
		g.Dir = filepath.Join(l.Unified.MountPoint, name)
		enableCPU(t, l.Unified.MountPoint)
	}
	if err := os.Mkdir(g.Dir, 0o755); err != nil {
		Unavailable(t, "cannot create a cgroup: %v", err)
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(30 * time.Second)
		for len(g.Procs(t)) > 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if err := os.Remove(g.Dir); err != nil && !os.IsNotExist(err) { // a test may remove it itself
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

// SetQuota changes the group's quota (us per period; -1: no limit),
// keeping its period.
func (g *Group) SetQuota(t testing.TB, quotaUsec int) {
	t.Helper()
	if g.Version == "v1" {
		g.write(t, "cpu.cfs_quota_us", strconv.Itoa(quotaUsec))
		return
	}
	b, err := os.ReadFile(filepath.Join(g.Dir, "cpu.max"))
	f := strings.Fields(string(b))
	if err != nil || len(f) != 2 {
		t.Fatalf("reading %s/cpu.max: %q %v", g.Dir, b, err)
	}
	q := "max"
	if quotaUsec >= 0 {
		q = strconv.Itoa(quotaUsec)
	}
	g.write(t, "cpu.max", q+" "+f[1])
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

// enableCPU makes sure the v2 group dir hands the cpu controller to its
// children, and takes it back when the test ends if it was not there before
// (cleanups run last-in first-out, so after the test's groups are gone).
func enableCPU(t testing.TB, dir string) {
	t.Helper()
	ctl := filepath.Join(dir, "cgroup.subtree_control")
	b, err := os.ReadFile(ctl)
	if err != nil {
		Unavailable(t, "reading %s: %v", ctl, err)
	}
	if slices.Contains(strings.Fields(string(b)), "cpu") {
		return
	}
	if err := os.WriteFile(ctl, []byte("+cpu"), 0o644); err != nil {
		Unavailable(t, "enabling the cpu controller in %s: %v", ctl, err)
	}
	t.Cleanup(func() {
		// Busy while another test's groups still use it: that test's own
		// cleanup, or the next one, takes it back.
		os.WriteFile(ctl, []byte("-cpu"), 0o644)
	})
}

// BandwidthSlice is the runtime a CPU takes from a group's quota at a time
// (kernel.sched_cfs_bandwidth_slice_us; 5 ms unless the host changed it). A
// period can hold the quota plus up to a slice per CPU left from the last,
// so bounds on use within one period allow that much.
func BandwidthSlice() time.Duration {
	b, err := os.ReadFile("/proc/sys/kernel/sched_cfs_bandwidth_slice_us")
	if err != nil {
		return 5 * time.Millisecond
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 5 * time.Millisecond
	}
	return time.Duration(v) * time.Microsecond
}
