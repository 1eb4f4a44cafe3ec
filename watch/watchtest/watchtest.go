// Package watchtest lays out the fake cgroup trees of watch's tests (testdata/*.txtar
// in package watch) in a temporary directory, for tests of watch, top and the
// command that drive it on a tree whose every file they know.
package watchtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/testenv"
	"github.com/throttlelab/throttlelab/testenv/testfs"
)

// Trees lists the fake trees: v1 with cpu and cpuacct apart, v1 joined with
// Kubernetes (cgroupfs driver), v2 with Kubernetes (systemd driver), a hybrid
// host with the cpu controller on v2.
var Trees = []string{"v1-split", "v1-joined-kubepods-cgroupfs", "v2-kubepods-systemd", "hybrid-v2-cpu"}

// FakeRoot writes the files of fake tree name ("-- path --" headers in
// watch/testdata/NAME.txtar, each followed by the file's content) into a new
// temporary directory and returns it, to be passed as a root path.
func FakeRoot(t testing.TB, name string) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "testdata", name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	var file string
	var content []byte
	flush := func() {
		if file == "" {
			return
		}
		testfs.WriteFile(t, root, file, content)
	}
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if h, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "-- "); ok && strings.HasSuffix(h, " --") {
			flush()
			file, content = strings.TrimSuffix(h, " --"), nil
			continue
		}
		if file != "" {
			content = append(content, line...)
		}
	}
	flush()
	return root
}

// CgroupPath returns a real group's cgroup path (as /proc/PID/cgroup and watch
// show it) from its directory in the cpu controller's hierarchy.
func CgroupPath(t testing.TB, dir string) string {
	t.Helper()
	l, err := cgroup.ReadLayout("/")
	if err != nil {
		t.Fatal(err)
	}
	m := cpuMount(t, l)
	rel, err := filepath.Rel(m.MountPoint, dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		t.Fatalf("%s is not under the cpu hierarchy %s", dir, m.MountPoint)
	}
	return filepath.Join(m.Root, rel)
}

func cpuMount(t testing.TB, l *cgroup.Layout) cgroup.MountInfo {
	switch l.CPUVersion() {
	case "v1":
		return l.V1["cpu"]
	case "v2":
		return *l.Unified
	}
	t.Fatal("no hierarchy has the cpu controller")
	return cgroup.MountInfo{}
}

// WithUsage gives a v1 group made in the cpu hierarchy (cgrouptest makes it
// there only) its twin in a cpuacct hierarchy mounted apart, so that its
// usage is counted, and returns the directories a process must join. On v2,
// or with cpu,cpuacct mounted together, it returns the group alone. The twin
// is removed when the test ends, after the processes started later.
func WithUsage(t testing.TB, g *cgrouptest.Group) []string {
	t.Helper()
	l, err := cgroup.ReadLayout("/")
	if err != nil {
		t.Fatal(err)
	}
	acct, ok := l.V1["cpuacct"]
	cpu := cpuMount(t, l)
	if g.Version != "v1" || !ok || acct.MountPoint == cpu.MountPoint {
		return []string{g.Dir}
	}
	rel, _ := filepath.Rel(cpu.MountPoint, g.Dir)
	twin := filepath.Join(acct.MountPoint, rel)
	if err := os.Mkdir(twin, 0o755); err != nil {
		t.Fatalf("making the cpuacct twin of %s: %v", g.Dir, err)
	}
	t.Cleanup(func() {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if err := os.Remove(twin); err == nil || os.IsNotExist(err) {
				return
			}
		}
		t.Errorf("removing %s: still busy", twin)
	})
	return []string{g.Dir, twin}
}

// Start runs a shell that moves itself into dirs and then spins (busy) or
// sleeps, and waits until it is in (and, to sleep, asleep); it is killed
// when the test ends.
func Start(t testing.TB, dirs []string, busy bool) {
	t.Helper()
	body := "exec sleep 60"
	if busy {
		body = "while :; do :; done"
	}
	pid := startShell(t, dirs, body)
	if busy {
		return
	}
	// Wait until it sleeps (state S: the shell itself never waits before
	// its exec, so this is the sleep): the exec costs tens of ms of CPU
	// under software emulation, which would otherwise land in the idle
	// group after the caller began to measure it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		// stat: "pid (comm) S ...": the state follows the last ')'.
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i+1:]), " S") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d never went to sleep", pid)
		}
	}
}

// StartShell runs a shell that moves itself into dirs and then runs body,
// and waits until it is in; it is killed, with what it started, when the
// test ends.
func StartShell(t testing.TB, dirs []string, body string) {
	t.Helper()
	startShell(t, dirs, body)
}

// startShell is StartShell, returning the shell's process id.
func startShell(t testing.TB, dirs []string, body string) int {
	t.Helper()
	var join strings.Builder
	for _, d := range dirs {
		fmt.Fprintf(&join, "echo $$ > '%s/cgroup.procs' && ", d)
	}
	cmd := exec.Command("sh", "-c", join.String()+body)
	// A process group of its own, so that what the shell started (a dd
	// that runs for seconds under a quota on a slow, emulated CPU) is
	// killed with it and leaves its group empty for the removal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	procs := filepath.Join(dirs[0], "cgroup.procs")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if b, _ := os.ReadFile(procs); len(strings.TrimSpace(string(b))) > 0 {
			return cmd.Process.Pid
		}
		if time.Now().After(deadline) {
			t.Fatal("the process never joined its group")
		}
	}
}

// SpinOn starts a busy loop in the groups dirs (a group and, on split v1
// hierarchies, its twins: WithUsage), held to CPU cpu, and waits until it
// is in; it is killed when the test ends.
func SpinOn(t testing.TB, dirs []string, cpu int) {
	t.Helper()
	pid := startShell(t, dirs, "while :; do :; done")
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(pid, &set); err != nil {
		t.Fatalf("holding pid %d to CPU %d: %v", pid, cpu, err)
	}
}

// StallGroups makes the two groups whose stall's split watch's tests check,
// on cgroup v2 with 2 CPUs: throttled, a busy loop under a quota of 0.2 CPU
// alone on CPU 1 (its stall is its quota), and crowded, a busy loop without
// a quota that shares CPU 0 with an unlimited neighbour's (its stall is
// contention). It returns their directories. With the cpu controller on v1
// it skips the test; without PSI or 2 CPUs it is Unavailable (a failure in
// CI).
func StallGroups(t testing.TB) (throttled, crowded string) {
	t.Helper()
	l := cgrouptest.Require(t)
	if l.CPUVersion() != "v2" {
		// Not Unavailable: on a v1 host, and in the matrix's v1 cells, this
		// is by design; the v2 and hybrid cells run it.
		t.Skipf("the stall's split is checked with the cpu controller on cgroup v2 (make test runs it in its v2 VMs); here it is on %s", l.CPUVersion())
	}
	if runtime.NumCPU() < 2 {
		testenv.Unavailable(t, "the stall's split needs 2 CPUs (one throttled group, one crowded), here %d", runtime.NumCPU())
	}
	thr := cgrouptest.LimitedGroup(t, 20000, 100000)
	if _, err := os.Stat(filepath.Join(thr.Dir, "cpu.pressure")); err != nil {
		testenv.Unavailable(t, "no cpu.pressure (a kernel without PSI, or booted with psi=0): %v", err)
	}
	cr := cgrouptest.LimitedGroup(t, 20000, 100000)
	nb := cgrouptest.LimitedGroup(t, 20000, 100000)
	for _, g := range []*cgrouptest.Group{cr, nb} {
		if err := os.WriteFile(filepath.Join(g.Dir, "cpu.max"), []byte("max 100000"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	SpinOn(t, []string{thr.Dir}, 1)
	SpinOn(t, []string{cr.Dir}, 0)
	SpinOn(t, []string{nb.Dir}, 0)
	return thr.Dir, cr.Dir
}
