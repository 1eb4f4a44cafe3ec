package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewChildGroupOnFakeV2: on v2 a nested group's parent gets the cpu
// controller in its subtree_control before the child is made, the child's
// quota is written inside the parent's, and what cannot be nested is
// refused with one line.
func TestNewChildGroupOnFakeV2(t *testing.T) {
	m, root := fakeManager(t, "v2-host", "0::/\n", map[string]string{
		"sys/fs/cgroup/cgroup.controllers":     "cpuset cpu memory\n",
		"sys/fs/cgroup/cgroup.subtree_control": "memory\n",
	}, false)
	pod, err := m.NewGroup("pod-1-a", Settings{QuotaUsec: 80000, PeriodUsec: 100000, Shares: 819, Weight: 32})
	if err != nil {
		t.Fatal(err)
	}
	kid, err := m.NewChildGroup(pod, "r1-a-0", Settings{QuotaUsec: 60000, PeriodUsec: 100000, Shares: 307, Weight: 12})
	if err != nil {
		t.Fatal(err)
	}
	podDir := filepath.Join(root, "sys/fs/cgroup/throttlelab/run1/pod-1-a")
	if got := read(t, filepath.Join(podDir, "cgroup.subtree_control")); got != "+cpu" {
		t.Errorf("the pod group's subtree_control = %q, want +cpu written", got)
	}
	if kid.Dirs["cpu"] != filepath.Join(podDir, "r1-a-0") || read(t, filepath.Join(kid.Dirs["cpu"], "cpu.max")) != "60000 100000" || read(t, filepath.Join(podDir, "cpu.max")) != "80000 100000" {
		t.Errorf("nested group at %v: cpu.max not the child's inside the pod's", kid.Dirs)
	}
	for name, tt := range map[string]struct {
		parent *Group
		s      Settings
		want   string
	}{
		"cpuset":       {pod, Settings{QuotaUsec: -1, Cpus: "0"}, "cannot have a cpuset"},
		"stray parent": {&Group{Name: "x", m: m}, Settings{QuotaUsec: -1}, "not one of this run's groups"},
		"nil parent":   {nil, Settings{QuotaUsec: -1}, "not one of this run's groups"},
	} {
		_, err := m.NewChildGroup(tt.parent, "c", tt.s)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line containing %q", name, err, tt.want)
		}
	}
	if _, err := m.NewChildGroup(pod, "../x", Settings{}); err == nil {
		t.Error("a path trick was accepted as a nested group name")
	}
	if err := m.Cleanup(false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "sys/fs/cgroup/throttlelab")); !os.IsNotExist(err) {
		t.Error("throttlelab left behind")
	}
}
