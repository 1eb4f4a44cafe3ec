package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestGroupPids: a pod's processes are in its containers' groups, so they
// are read from its descendants; the root group's descendants (the whole
// host) are not.
func TestGroupPids(t *testing.T) {
	dir := t.TempDir()
	for p, s := range map[string]string{"cgroup.procs": "", "c1/cgroup.procs": "10\n11\n", "c2/cgroup.procs": "20\n", "c2/x/cgroup.procs": "30\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := groupPids(dir, true)
	slices.Sort(got)
	if !slices.Equal(got, []int{10, 11, 20, 30}) {
		t.Errorf("a pod's pids: %v, want 10 11 20 30", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := groupPids(dir, false); !slices.Equal(got, []int{1}) {
		t.Errorf("the root group's pids: %v, want its own 1 only", got)
	}
}
