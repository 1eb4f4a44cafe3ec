package cgroup_test

import (
	"os/exec"
	"strconv"
	"testing"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
)

func TestRealProcessLimits(t *testing.T) {
	g := cgrouptest.LimitedGroup(t, 30000, 100000)
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Registered after the group's cleanup, so it runs first: the group is empty
	// by the time it is removed.
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	g.Add(t, cmd.Process.Pid)
	got, err := cgroup.ReadProcessLimits("/", strconv.Itoa(cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if got.Group != g.Dir || got.QuotaUsec != 30000 || got.PeriodUsec != 100000 || got.LimitCores != 0.3 || got.CPUVersion != g.Version {
		t.Errorf("limits of a process in %s = %+v, want quota 30000 period 100000 limit 0.3", g.Dir, got)
	}
}
