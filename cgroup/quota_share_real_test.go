package cgroup_test

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/testenv"
)

// quotaShareEnv sets how many periods TestQuotaShareReal watches each load
// for (default 30): docs/simulator.md's per-kernel line is measured with 300.
const quotaShareEnv = "THROTTLELAB_QUOTA_SHARE_PERIODS"

// TestQuotaShareReal measures the quota itself on this kernel: the share of
// periods throttled for a fixed demand under a fixed limit. A busy loop under
// 200m is throttled in nearly every period and uses about its quota; the
// bursty load (about 0.2 cores in random 5 ms burns, TestMain) under 250m is
// throttled in some periods and not in others. Both loads burn for a span of
// time, not a count of instructions, so their demand is the same on a slower
// (emulated) CPU. It logs the figures for docs/simulator.md and checks their
// shape.
func TestQuotaShareReal(t *testing.T) {
	periods := uint64(30)
	if v := os.Getenv(quotaShareEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n < 10 {
			t.Fatalf("%s=%q: want a number of periods, 10 or more", quotaShareEnv, v)
		}
		periods = n
	}
	busy := watchShare(t, 20000, periods, "while :; do :; done")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bursty := watchShare(t, 25000, periods, "exec env "+burstyEnv+"=1 '"+self+"'")
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	t.Logf("quota share on %s: busy loop under 200m: %d of %d periods throttled (%.0f%%), %.3f cores used; bursty 0.2-core load under 250m: %d of %d periods throttled (%.0f%%), %.3f cores used",
		trimNL(kernel), busy.throttled, busy.periods, busy.pct(), busy.cores, bursty.throttled, bursty.periods, bursty.pct(), bursty.cores)
	if busy.throttled*10 < busy.periods*8 || busy.cores > 0.2*1.25 {
		t.Errorf("busy loop under 200m: %d of %d periods throttled, %.3f cores: want nearly every period throttled and use near the quota", busy.throttled, busy.periods, busy.cores)
	}
	// Under software emulation the load's own runtime costs several times
	// the CPU, so it may be throttled in every period (testenv.EmulatedEnv).
	if bursty.throttled == 0 || bursty.throttled >= bursty.periods && !testenv.Emulated() {
		t.Errorf("bursty load under 250m: %d of %d periods throttled: want some periods throttled and some not", bursty.throttled, bursty.periods)
	}
}

type share struct {
	periods, throttled uint64
	cores              float64
}

func (s share) pct() float64 { return 100 * float64(s.throttled) / float64(s.periods) }

// watchShare runs the shell command in a new group limited to quotaUsec per
// 100 ms until the group has seen the given number of periods, and returns
// its counters over them.
func watchShare(t *testing.T, quotaUsec int64, periods uint64, command string) share {
	t.Helper()
	cgrouptest.Require(t)
	m, err := cgroup.NewManager("/", fmt.Sprintf("share-%d-%d", os.Getpid(), quotaUsec), false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := m.Cleanup(true); err != nil {
			t.Error(err)
		}
	}()
	g, err := m.NewGroup("limited", cgroup.Settings{QuotaUsec: quotaUsec, PeriodUsec: 100000})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `for d in $DIRS; do echo $$ > "$d/cgroup.procs" || exit 97; done; `+command)
	for _, d := range g.Dirs {
		cmd.Env = append(cmd.Env, d)
	}
	cmd.Env = append(os.Environ(), "DIRS="+strings.Join(cmd.Env, " "))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	start := time.Now()
	for {
		st, err := g.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if st.Periods >= periods {
			u, err := g.Usage()
			if err != nil {
				t.Fatal(err)
			}
			return share{periods: st.Periods, throttled: st.ThrottledPeriods, cores: float64(u) / float64(time.Since(start))}
		}
		if time.Since(start) > time.Duration(periods)*time.Second {
			t.Fatalf("the group saw %d periods in %s, want %d", st.Periods, time.Since(start), periods)
		}
		time.Sleep(50 * time.Millisecond) // polls the kernel's count; no ordering rests on it
	}
}

func trimNL(b []byte) string { return strings.TrimSpace(string(b)) }
