package cgroup

import (
	"math"
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

// TestOtherCores: the rest of the machine's mean cores between two marks,
// and unknown (not 0) when it cannot be told.
func TestOtherCores(t *testing.T) {
	t0 := time.Unix(1000, 0)
	mark := func(at time.Duration, cpus int, idle, ours time.Duration) HostMark {
		return HostMark{At: t0.Add(at), CPUs: cpus, Idle: idle, Ours: ours}
	}
	for _, c := range []struct {
		name          string
		before, after HostMark
		want          float64
		ok            bool
	}{
		// 2 CPUs for 10 s: 20 s of CPU time, 12 s idle, 5 s ours: 3 s others.
		{"others", mark(0, 2, 100*time.Second, 7*time.Second), mark(10*time.Second, 2, 112*time.Second, 12*time.Second), 0.3, true},
		// Idle counted in ticks can leave ours above the busy time: none.
		{"tick rounding", mark(0, 2, 0, 0), mark(time.Second, 2, 1990*time.Millisecond, 20*time.Millisecond), 0, true},
		{"a CPU went off line", mark(0, 2, 0, 0), mark(time.Second, 1, 0, 0), 0, false},
		{"marks out of order", mark(time.Second, 2, 0, 0), mark(0, 2, 0, 0), 0, false},
		{"no mark taken", HostMark{}, mark(time.Second, 2, 0, 0), 0, false},
	} {
		got, ok := OtherCores(c.before, c.after)
		if ok != c.ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
