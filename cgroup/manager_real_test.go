package cgroup_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
)

// TestManagerReal runs a busy process in a real group with a 0.25-CPU limit, a
// burst and a one-CPU cpuset, and checks what the kernel says: throttled periods,
// usage, the CPU it may run on. Cleanup with kill leaves neither process nor
// directory behind.
func TestManagerReal(t *testing.T) {
	cgrouptest.Require(t)
	runID := fmt.Sprintf("test-%d", os.Getpid())
	m, err := cgroup.NewManager("/", runID, true)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := m.Cleanup(true); err != nil {
			t.Error(err)
		}
	}()
	k := cgroup.KubeCPU{RequestMilli: 250, LimitMilli: 250, Cpus: "0"}
	if m.BurstSupported() {
		k.BurstUsec = 10000
	}
	s, qos, err := k.Settings(cgroup.WeightQuadratic)
	if err != nil || qos != cgroup.Guaranteed {
		t.Fatal(qos, err)
	}
	g, err := m.NewGroup("limited", s)
	if err != nil {
		t.Fatal(err)
	}
	// What the kernel holds now, read back in its own terms.
	want := map[string]string{"cpu.cfs_quota_us": "25000", "cpu.cfs_period_us": "100000", "cpu.shares": "256"}
	if m.Version() == "v2" {
		want = map[string]string{"cpu.max": "25000 100000", "cpu.weight": fmt.Sprint(s.Weight)}
		if m.BurstSupported() {
			want["cpu.max.burst"] = "10000"
		}
	} else if m.BurstSupported() {
		want["cpu.cfs_burst_us"] = "10000"
	}
	for f, v := range want {
		if b, err := os.ReadFile(filepath.Join(g.Dirs["cpu"], f)); err != nil || strings.TrimSpace(string(b)) != v {
			t.Errorf("%s = %q (%v), want %q", f, b, err, v)
		}
	}
	// The shell moves itself in before it spins: it never runs unconfined.
	cmd := exec.Command("sh", "-c", "for d in \"$@\"; do echo $$ > \"$d/cgroup.procs\"; done; while :; do :; done", "sh")
	for _, d := range g.Dirs {
		cmd.Args = append(cmd.Args, d)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	before, _ := g.Stat()
	// Let it spin through a few periods; the deadline is a safety net.
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := g.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if d := st.Sub(before); d.ThrottledPeriods >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	st, _ := g.Stat()
	d := st.Sub(before)
	if d.ThrottledPeriods < 3 || d.ThrottledUsec == 0 {
		t.Errorf("a spinning process at 0.25 CPU: cpu.stat delta %+v, want throttled periods", d)
	}
	// On v2 a throttled group's runnable task waits for a CPU: CPU pressure.
	if m.Version() == "v2" && d.PressureSomeUsec == 0 {
		t.Errorf("cgroup v2: cpu.pressure some total did not move while throttled: %+v", d)
	}
	if u, err := g.Usage(); err != nil || u <= 0 {
		t.Errorf("usage %s, %v", u, err)
	}
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if !strings.Contains(string(status), "Cpus_allowed_list:\t0\n") {
		t.Errorf("the process may run on more than CPU 0:\n%s", status)
	}
	if procs := g.Procs(); len(procs) != 1 || procs[0] != cmd.Process.Pid {
		t.Errorf("group holds %v, want [%d]", procs, cmd.Process.Pid)
	}
	dirs := g.Dirs
	if err := m.Cleanup(true); err != nil {
		t.Fatal(err)
	}
	<-done
	if err := cmd.Process.Signal(syscall.Signal(0)); err == nil {
		t.Error("the process survived the cleanup")
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s left behind", d)
		}
		if _, err := os.Stat(filepath.Dir(d)); !os.IsNotExist(err) {
			t.Errorf("%s left behind", filepath.Dir(d))
		}
	}
}

// TestSideGroupReal moves this test process into a real side group (the load
// generator's place), sees the kernel put it there and charge its CPU to the
// group, moves it back where it was and removes the group.
func TestSideGroupReal(t *testing.T) {
	cgrouptest.Require(t)
	before, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	m, err := cgroup.NewManager("/", fmt.Sprintf("side-%d", os.Getpid()), false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := m.Cleanup(false); err != nil {
			t.Error(err)
		}
	}()
	g, err := m.NewSideGroup("loadgen", cgroup.Settings{QuotaUsec: -1, Shares: 1024, Weight: 100})
	if err != nil {
		t.Fatal(err)
	}
	if want := "/throttlelab-loadgen-side-"; !strings.Contains(g.Dirs["cpu"], want) {
		t.Errorf("side group at %s, want %s<pid> at the top of the hierarchy", g.Dirs["cpu"], want)
	}
	restore, err := g.AttachSelf()
	if err != nil {
		t.Fatal(err)
	}
	inside, _ := os.ReadFile("/proc/self/cgroup")
	for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
	}
	used, uerr := g.Usage()
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(inside), "/throttlelab-loadgen-side-") {
		t.Errorf("/proc/self/cgroup while attached:\n%s", inside)
	}
	if uerr != nil || used <= 0 {
		t.Errorf("the group was charged %s (%v) for spinning in it", used, uerr)
	}
	if after, _ := os.ReadFile("/proc/self/cgroup"); string(after) != string(before) {
		t.Errorf("not moved back:\nbefore\n%s\nafter\n%s", before, after)
	}
}
