package cgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// realCPUGroup makes a cgroup with the cpu controller on this host, limited to
// quota/period, or skips the test saying why it cannot. It is removed at the end.
func realCPUGroup(t *testing.T, quotaUsec, periodUsec int) (dir, version string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("real cgroup test needs root")
	}
	l, err := ReadLayout("/")
	if err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	name := fmt.Sprintf("throttlelab-test-%d", os.Getpid())
	switch l.CPUVersion() {
	case "v1":
		dir = filepath.Join(l.V1["cpu"].MountPoint, name)
	case "v2":
		dir = filepath.Join(l.Unified.MountPoint, name)
	default:
		t.Skip("no hierarchy has the cpu controller")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot create a cgroup: %v", err)
	}
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	write := func(file, v string) {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644); err != nil {
			t.Fatalf("writing %s: %v", file, err)
		}
	}
	if l.CPUVersion() == "v1" {
		// Period first: a quota is checked against the current period.
		write("cpu.cfs_period_us", strconv.Itoa(periodUsec))
		write("cpu.cfs_quota_us", strconv.Itoa(quotaUsec))
	} else {
		write("cpu.max", fmt.Sprintf("%d %d", quotaUsec, periodUsec))
	}
	return dir, l.CPUVersion()
}

func TestRealProcessLimits(t *testing.T) {
	dir, version := realCPUGroup(t, 30000, 100000)
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		t.Fatalf("moving the child into %s: %v", dir, err)
	}
	got, err := ReadProcessLimits("/", strconv.Itoa(cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if got.Group != dir || got.QuotaUsec != 30000 || got.PeriodUsec != 100000 || got.LimitCores != 0.3 || got.CPUVersion != version {
		t.Errorf("limits of a process in %s = %+v, want quota 30000 period 100000 limit 0.3", dir, got)
	}
	// Move it back out so the group can be removed.
	parent := filepath.Dir(dir)
	os.WriteFile(filepath.Join(parent, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
}
