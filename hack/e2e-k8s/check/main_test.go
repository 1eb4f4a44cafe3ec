package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostPodGroup reads the rig's host readings: the one pod cgroup with the
// pod-level quota (v1's two numbers, v2's cpu.max), its counts; none or two
// such is an error.
func TestHostPodGroup(t *testing.T) {
	write := func(dir, name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v1 := "group /sys/fs/cgroup/cpu/kubepods/burstable/poda\nquota 80000 100000 \nnr_periods 134\nnr_throttled 12\nthrottled_time 248404380\n"
	v2 := "group /sys/fs/cgroup/kubepods/burstable/poda\nquota 80000 100000\nusage_usec 9\nnr_periods 134\nnr_throttled 12\nthrottled_usec 248404\n"
	other := "group /x/podb\nquota 60000 100000\nnr_periods 1\nnr_throttled 0\nthrottled_time 0\n"
	for name, text := range map[string]string{"v1": v1, "v2": v2} {
		dir := t.TempDir()
		write(dir, "poda.txt", text)
		write(dir, "podb.txt", other)
		g, err := hostPodGroup(dir)
		if err != nil || g.QuotaUsec != 80000 || g.PeriodUsec != 100000 || g.CPUStat.Periods != 134 || g.CPUStat.ThrottledPeriods != 12 || g.CPUStat.ThrottledUsec != 248404 {
			t.Errorf("%s: %+v, %v", name, g, err)
		}
	}
	dir := t.TempDir()
	write(dir, "podb.txt", other)
	if _, err := hostPodGroup(dir); err == nil || !strings.Contains(err.Error(), "0 pod cgroups") {
		t.Errorf("no pod-level quota among the readings: %v", err)
	}
	write(dir, "poda.txt", v1)
	write(dir, "podc.txt", v1)
	if _, err := hostPodGroup(dir); err == nil || !strings.Contains(err.Error(), "2 pod cgroups") {
		t.Errorf("two: %v", err)
	}
}
