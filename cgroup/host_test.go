package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseHostIdle(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     time.Duration
		cpus     int
		err      string
	}{
		// idle 9999 and iowait 50 ticks of 10 ms, two CPUs
		{"idle and iowait", "cpu  100 20 30 9999 50 1 2 3 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\ncpu1 1 2 3 4 5 6 7 8 0 0\nintr 5\n", 10049 * 10 * time.Millisecond, 2, ""},
		{"no cpuN line", "cpu  1 2 3 4 5 6 7\nintr 1\n", 0, 0, "no cpuN line"},
		{"per-CPU line first", "cpu0 1 2 3 4 5 6 7 8\n", 0, 0, "not a /proc/stat cpu line"},
		{"garbage", "cpu  1 2 3 x 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\n", 0, 0, "field 4"},
		{"empty", "", 0, 0, "not a /proc/stat cpu line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, cpus, err := ParseHostIdle([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || cpus != tc.cpus {
				t.Fatalf("got %v, %d CPUs, %v; want %v, %d", got, cpus, err, tc.want, tc.cpus)
			}
		})
	}
}

func TestHostIdleReadsRoot(t *testing.T) {
	root := t.TempDir()
	if _, _, err := HostIdle(root); err == nil || !strings.Contains(err.Error(), "proc/stat") {
		t.Fatalf("missing file: %v", err)
	}
	os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	os.WriteFile(filepath.Join(root, "proc/stat"), []byte("cpu  5 0 5 100 0 0 0 0 0 0\ncpu0 5 0 5 100 0 0 0 0 0 0\n"), 0o644)
	if got, cpus, err := HostIdle(root); err != nil || got != time.Second || cpus != 1 {
		t.Fatalf("got %v, %d, %v; want 1s, 1", got, cpus, err)
	}
}
