package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseHostBusy(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     time.Duration
		err      string
	}{
		// user 100, nice 20, system 30, idle 9999, iowait 50, irq 1, softirq 2, steal 3
		{"busy fields only", "cpu  100 20 30 9999 50 1 2 3 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n", 156 * 10 * time.Millisecond, ""},
		{"no steal column", "cpu  1 2 3 4 5 6 7\n", 0, "not a /proc/stat cpu line"},
		{"per-CPU line first", "cpu0 1 2 3 4 5 6 7 8\n", 0, "not a /proc/stat cpu line"},
		{"garbage", "cpu  1 x 3 4 5 6 7 8\n", 0, "field 2"},
		{"empty", "", 0, "not a /proc/stat cpu line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseHostBusy([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestHostBusyReadsRoot(t *testing.T) {
	root := t.TempDir()
	if _, err := HostBusy(root); err == nil || !strings.Contains(err.Error(), "proc/stat") {
		t.Fatalf("missing file: %v", err)
	}
	os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	os.WriteFile(filepath.Join(root, "proc/stat"), []byte("cpu  5 0 5 100 0 0 0 0 0 0\n"), 0o644)
	if got, err := HostBusy(root); err != nil || got != 100*time.Millisecond {
		t.Fatalf("got %v, %v; want 100ms", got, err)
	}
}
