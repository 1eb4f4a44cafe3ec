package watch

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/testenv/testfs"
)

// throttleModel is a v1 group's counters as the kernel moves them, played
// as an adversary of Options.StatByNeed: time in 1 ms steps, a period timer
// at a random phase, a period throttled (nr_throttled up at its tick) as
// soon as its use reaches the quota less the slack (the least the kernel
// allows: cgroup.ThrottleSlack), and a period that follows a throttled one
// throttled at any use, half the time (the refill first pays what the group
// ran over).
type throttleModel struct {
	rng                  *rand.Rand
	quota, period, slack time.Duration
	phase, now           time.Duration
	usage, periods, thr  uint64
	periodUse            time.Duration
	hit                  bool
	busy                 int // this stretch's use per ms, in µs (up to 2 CPUs)
}

// advance runs the model to t.
func (m *throttleModel) advance(t time.Duration) {
	for m.now < t {
		m.now += time.Millisecond
		if m.rng.IntN(300) == 0 { // stretches of 0.3 s on average, mostly light
			m.busy = []int{0, 0, 50, 100, 300, 600, 1500, 2000}[m.rng.IntN(8)]
		}
		m.usage += uint64(m.busy) * 1000
		m.periodUse += time.Duration(m.busy) * time.Microsecond
		if m.periodUse >= m.quota-m.slack {
			m.hit = true
		}
		if (m.now-m.phase)%m.period == 0 { // the tick
			m.periods++
			if m.hit {
				m.thr++
			}
			// the next period throttled whatever its use, half the time
			// after a throttled one
			m.hit, m.periodUse = m.hit && m.rng.IntN(2) == 0, 0
		}
	}
}

// TestStatByNeedMissesNoThrottle: with Options.StatByNeed, at every sample
// of a v1 group the nr_throttled Observe gets is the kernel's at that
// instant (the model's, above), whether the group is read every 10 ms
// (hot), on the 100 ms grid, or late, over random demand, phases and
// seeds; cpu.stat is read at far fewer samples than there are, every report
// finds the model's nr_periods, and no report finds a move the rule missed.
// With the slack taken too small (below the kernel's bound), the same
// model shows missed moves: the test can fail.
func TestStatByNeedMissesNoThrottle(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			missed, reads, samples, _ := runThrottleModel(t, seed, 0, 0)
			if missed != 0 {
				t.Fatalf("%d samples saw an nr_throttled other than the kernel's", missed)
			}
			if reads*2 > samples {
				t.Errorf("cpu.stat read at %d of %d samples: want under half", reads, samples)
			}
			t.Logf("cpu.stat read at %d of %d samples", reads, samples)
		})
	}
	t.Run("slack too small", func(t *testing.T) {
		for seed := range uint64(6) {
			if missed, _, _, _ := runThrottleModel(t, seed, time.Millisecond, 0); missed > 0 {
				return
			}
		}
		t.Fatal("with a slack of 1 ms every nr_throttled was seen in time: the model does not test the rule")
	})
}

// TestStatByNeedQuotaLowered: the quota lowered between two reports (an
// in-place resize: 150 ms to 40 ms a period, written to
// cpu.cfs_quota_us), while the watcher's rule still holds the old one: at
// every sample the nr_throttled Observe gets is the kernel's, and no report
// finds a move the rule missed. The write is seen (inotify) at the next
// sample, and cpu.stat is read at each of the group's samples until the
// report reads its settings again.
func TestStatByNeedQuotaLowered(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			missed, _, _, reported := runThrottleModel(t, seed, 0, 5*time.Second+50*time.Millisecond)
			if missed != 0 || reported != 0 {
				t.Fatalf("%d samples saw an nr_throttled other than the kernel's, %d moves a report found missed", missed, reported)
			}
		})
	}
}

// runThrottleModel runs the model of seed against a watcher for 30 s of
// samples with reports every 10 s, and returns the samples whose
// nr_throttled differed from the model's, the cpu.stat reads, the samples
// and the moves the reports counted as missed. slack, if not 0, replaces
// the watcher's; lowerAt, if not 0, is when the quota is lowered to 40 ms
// (the model's and the group's cpu.cfs_quota_us), and the run must see a
// throttled period after it.
func runThrottleModel(t *testing.T, seed uint64, slack, lowerAt time.Duration) (missed, reads, samples int, reported int64) {
	root := expand(t, "v1-split")
	const grp = "/throttlelab/limits-4242/limited-0"
	const dir = "sys/fs/cgroup/%s" + grp + "/%s"
	testfs.WriteFile(t, root, "proc/sys/kernel/sched_cfs_bandwidth_slice_us", []byte("5000\n"))
	testfs.WriteFile(t, root, "sys/devices/system/cpu/possible", []byte("0-1\n"))
	writeFile(t, root, fmt.Sprintf(dir, "cpu", "cpu.cfs_quota_us"), "150000\n")
	rng := rand.New(rand.NewPCG(seed, 38))
	ms := time.Millisecond
	m := &throttleModel{rng: rng, quota: 150 * ms, period: 100 * ms, slack: 20 * ms, phase: time.Duration(rng.IntN(100)) * ms}
	write := func() {
		writeFile(t, root, fmt.Sprintf(dir, "cpuacct", "cpuacct.usage"), fmt.Sprintf("%d\n", m.usage))
		writeFile(t, root, fmt.Sprintf(dir, "cpu", "cpu.stat"), fmt.Sprintf("nr_periods %d\nnr_throttled %d\nthrottled_time %d\n", m.periods, m.thr, m.thr*1000))
	}
	write()
	hot := false
	var seen uint64
	policy := TestPolicy{
		PicksFn:  func(id Identity) bool { return strings.HasSuffix(id.Name, "limited-0") },
		OnGridFn: func(at time.Duration) bool { return at%(100*ms) == 0 },
		ObserveFn: func(s Sample) bool {
			if s.Path == grp {
				seen = s.ThrottledPeriods
			}
			return hot
		},
	}
	w, err := New(Options{Root: root, ByNeed: ByNeed{Policy: policy, Stat: true, Coarse: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if slack != 0 {
		w.slack = slack
	} else if w.slack != 20*ms {
		t.Fatalf("slack %s, want 20ms (2 CPUs, 5 ms slices, a 10 ms tick)", w.slack)
	}
	g := w.groups[grp]
	cs := &countingFile{CounterFile: g.counters.Stat}
	g.counters.Stat = cs
	thrAtLower := uint64(0)
	for at := time.Duration(0); at < 30*time.Second; {
		if lowerAt > 0 && at >= lowerAt && m.quota != 40*ms {
			m.advance(lowerAt)
			m.quota, thrAtLower = 40*ms, m.thr
			writeFile(t, root, fmt.Sprintf(dir, "cpu", "cpu.cfs_quota_us"), "40000\n")
		}
		m.advance(at)
		write()
		seen = ^uint64(0)
		w.Sample(at)
		if seen != ^uint64(0) { // read at this instant (hot, or on the grid)
			samples++
			if seen != m.thr {
				missed++
			}
		}
		if at%(10*time.Second) == 0 && at > 0 {
			for _, st := range w.Report() {
				if st.Path == grp && st.Totals.Periods != m.periods {
					t.Errorf("the report at %s: nr_periods %d, the kernel's %d", at, st.Totals.Periods, m.periods)
				}
			}
		}
		if rng.IntN(200) == 0 {
			hot = !hot
		}
		at += 10 * ms
		if rng.IntN(50) == 0 {
			at += time.Duration(1+rng.IntN(15)) * 10 * ms // a late wake-up
		}
	}
	if lowerAt > 0 && m.thr == thrAtLower {
		t.Errorf("no period throttled after the quota was lowered: the run shows nothing")
	}
	if slack == 0 && lowerAt == 0 && w.MissedThrottles() != 0 {
		t.Errorf("the reports counted %d missed moves", w.MissedThrottles())
	}
	return missed, cs.n, samples, w.MissedThrottles()
}
