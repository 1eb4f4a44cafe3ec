package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReadThrottleSlack: the slack from a root's slice and possible CPUs
// (a slice per CPU and a tick), and a one-line error naming the file where
// one is missing or holds no CPU.
func TestReadThrottleSlack(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("proc/sys/kernel/sched_cfs_bandwidth_slice_us", "5000\n")
	if _, err := ReadThrottleSlack(root); err == nil || !strings.Contains(err.Error(), "possible") {
		t.Errorf("no possible CPU list: err %v, want one naming the file", err)
	}
	write("sys/devices/system/cpu/possible", "0-3\n")
	got, err := ReadThrottleSlack(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := 4*5*time.Millisecond + 10*time.Millisecond; got != want {
		t.Errorf("4 CPUs, 5 ms slices: slack %v, want %v", got, want)
	}
	write("sys/devices/system/cpu/possible", "\n")
	if _, err := ReadThrottleSlack(root); err == nil || !strings.Contains(err.Error(), "lists no CPU") {
		t.Errorf("an empty list: err %v, want \"lists no CPU\"", err)
	}
}
