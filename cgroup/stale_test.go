package cgroup

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

func TestStaleRun(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"x-" + strconv.Itoa(os.Getpid()), false}, // alive: this test
		{"x-999999999", true},                     // no such process
		{"limits", false},                         // not NAME-PID: not ours to judge
		{"x-0", false},
		{"x-abc", false},
	}
	for _, tt := range tests {
		if got := staleRun(tt.name); got != tt.want {
			t.Errorf("staleRun(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestRemoveStaleSideGroups: a killed run's side group (the load
// generator's, beside throttlelab/) is removed; a live run's, a busy one and
// other groups at the top are left alone.
func TestRemoveStaleSideGroups(t *testing.T) {
	root := fakeRoot(t, "v2-host", "0::/\n", map[string]string{
		"sys/fs/cgroup/cgroup.controllers":                           "cpu\n",
		"sys/fs/cgroup/throttlelab-loadgen-x-999999999/cpu.weight":   "", // stale: removed
		"sys/fs/cgroup/throttlelab-loadgen-x-999999998/cgroup.procs": "42\n",
	})
	live := "throttlelab-loadgen-x-" + strconv.Itoa(os.Getpid())
	for _, d := range []string{live, "throttlelab-other", "system.slice"} {
		if err := os.Mkdir(filepath.Join(root, "sys/fs/cgroup", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// cgroupfs lets rmdir remove a group with its files; a fake tree needs
	// them gone first.
	os.Remove(filepath.Join(root, "sys/fs/cgroup/throttlelab-loadgen-x-999999999/cpu.weight"))
	removed, err := RemoveStale(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(root, "sys/fs/cgroup/throttlelab-loadgen-x-999999999")}; !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	for _, d := range []string{live, "throttlelab-other", "system.slice", "throttlelab-loadgen-x-999999998"} {
		if _, err := os.Stat(filepath.Join(root, "sys/fs/cgroup", d)); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}

// TestRemoveStaleNested: a killed run's nested groups (a pod's instances
// inside the pod's group) go before their parent, then the run's directory.
func TestRemoveStaleNested(t *testing.T) {
	root := fakeRoot(t, "v2-host", "0::/\n", map[string]string{
		"sys/fs/cgroup/cgroup.controllers": "cpu\n",
	})
	run := filepath.Join(root, "sys/fs/cgroup/throttlelab/x-999999999")
	for _, d := range []string{"pod-1-a/r1-a-0", "pod-1-a/r1-a-1", "r1-b-0"} {
		if err := os.MkdirAll(filepath.Join(run, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := RemoveStale(root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(removed, run) {
		t.Errorf("removed %q, want %s among them", removed, run)
	}
	if _, err := os.Stat(run); !os.IsNotExist(err) {
		t.Errorf("%s left behind (%v)", run, err)
	}
}
