package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageCounter: where each layout keeps a group's usage, and what a
// group without it gets.
func TestUsageCounter(t *testing.T) {
	for _, c := range []struct {
		name            string
		version         string
		files           map[string]string // under cpu/ and acct/
		cpu, acct       bool              // which directories the group has
		lenient         bool              // OpenCounters rather than OpenUsage
		wantOpenErr     error
		wantUsageNs     uint64
		wantHasUsage    bool
		wantReadErr     error
		wantThrottled   uint64
		wantThrottledUs uint64
	}{
		{name: "v2", version: "v2", cpu: true, acct: true,
			files:       map[string]string{"cpu/cpu.stat": "usage_usec 777\nnr_periods 9\nnr_throttled 4\nthrottled_usec 12\n"},
			wantUsageNs: 777000, wantHasUsage: true, wantThrottled: 4, wantThrottledUs: 12},
		{name: "v2 without the cpu controller", version: "v2", acct: true, lenient: true,
			files:       map[string]string{"acct/cpu.stat": "usage_usec 5\nuser_usec 4\nsystem_usec 1\n"},
			wantUsageNs: 5000, wantHasUsage: true},
		{name: "v2 cpu.stat without usage_usec", version: "v2", cpu: true, acct: true,
			files:       map[string]string{"cpu/cpu.stat": "nr_periods 1\n"},
			wantReadErr: ErrNoUsage},
		{name: "v1 split", version: "v1", cpu: true, acct: true,
			files:       map[string]string{"cpu/cpu.stat": "nr_periods 10\nnr_throttled 3\nthrottled_time 5000\n", "acct/cpuacct.usage": "1500000\n"},
			wantUsageNs: 1500000, wantHasUsage: true, wantThrottled: 3, wantThrottledUs: 5},
		{name: "v1 outside cpuacct", version: "v1", cpu: true,
			files:       map[string]string{"cpu/cpu.stat": "nr_periods 10\n"},
			wantOpenErr: ErrNoUsage},
		{name: "v1 outside cpuacct, shown all the same", version: "v1", cpu: true, lenient: true,
			files:       map[string]string{"cpu/cpu.stat": "nr_periods 10\nnr_throttled 2\nthrottled_time 0\n"},
			wantReadErr: ErrNoUsage, wantThrottled: 2},
		{name: "v1 cpuacct only", version: "v1", acct: true, lenient: true,
			files:       map[string]string{"acct/cpuacct.usage": "42\n"},
			wantUsageNs: 42, wantHasUsage: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for f, v := range c.files {
				p := filepath.Join(root, f)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var cpu, acct string
			if c.cpu {
				cpu = filepath.Join(root, "cpu")
			}
			if c.acct {
				acct = filepath.Join(root, "acct")
			}
			var u *UsageCounter
			var err error
			if c.lenient {
				u, err = OpenCounters(c.version, cpu, acct, OpenCounterFile)
			} else {
				u, err = OpenUsage(c.version, cpu, acct)
			}
			if !errors.Is(err, c.wantOpenErr) {
				t.Fatalf("open: %v, want %v", err, c.wantOpenErr)
			}
			if err != nil {
				return
			}
			defer u.Close()
			r, err := u.Read(true)
			if err != nil {
				t.Fatal(err)
			}
			if r.UsageNs != c.wantUsageNs || r.HasUsageNs != c.wantHasUsage || r.ThrottledPeriods != c.wantThrottled || r.ThrottledUsec != c.wantThrottledUs {
				t.Errorf("read %+v", r)
			}
			if _, err := u.ReadUsage(false); !errors.Is(err, c.wantReadErr) {
				t.Errorf("ReadUsage: %v, want %v", err, c.wantReadErr)
			}
			if u.CountsUsage() != (c.wantOpenErr == nil && (c.wantHasUsage || c.version == "v2")) {
				t.Errorf("CountsUsage %v", u.CountsUsage())
			}
		})
	}
	if _, err := OpenUsage("v3", "", ""); err == nil || !strings.Contains(err.Error(), "want v1 or v2") {
		t.Errorf("version v3: %v", err)
	}
}
