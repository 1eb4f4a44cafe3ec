package advise

import (
	"html"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/report"
)

// underQuota runs, at 1 ms steps, one thread asked for burst of work every
// every, first at offset, under quota per 100 ms period, as the kernel's
// bandwidth control would, and returns 10 ms readings: the arrivals (the
// true demand), the use and nr_throttled (counted at the refill).
func underQuota(span, burst, every, offset, quota time.Duration) (arrived, used *Demand, thr []uint64) {
	return underQuotaBG(time.Millisecond, span, burst, every, offset, quota, 0)
}

// underQuotaBG is underQuota in steps of step, with background work of bg
// arriving every 10 ms besides the bursts (a server's timers and probes).
func underQuotaBG(step, span, burst, every, offset, quota, bg time.Duration) (arrived, used *Demand, thr []uint64) {
	arrived, used = &Demand{Cores: 1, Arrivals: true}, &Demand{Cores: 1}
	var a, u, backlog, runtime time.Duration
	var n uint64
	throttledNow := false
	for t := time.Duration(0); t <= span; t += step {
		if t%(100*time.Millisecond) == 0 {
			// The period timer counts a throttled group when it refills it
			// (do_sched_cfs_period_timer), not when it was throttled.
			if throttledNow {
				n++
			}
			runtime, throttledNow = quota, false
		}
		if t >= offset && (t-offset)%every == 0 {
			a += burst
			backlog += burst
		}
		if bg > 0 && t%(10*time.Millisecond) == 0 {
			a += bg
			backlog += bg
		}
		if t%(10*time.Millisecond) == 0 {
			arrived.At, arrived.Usage = append(arrived.At, t), append(arrived.Usage, a)
			used.At, used.Usage = append(used.At, t), append(used.Usage, u)
			thr = append(thr, n)
		}
		run := min(step, backlog, runtime)
		u, backlog, runtime = u+run, backlog-run, runtime-run
		if backlog > 0 && runtime == 0 {
			throttledNow = true
		}
	}
	return arrived, used, thr
}

// TestReconstructRecoversBursts: a 50 ms burst every 400 ms sampled under
// 200m runs as 20 ms a period, so replayed as use 425m looks unthrottled;
// the reconstruction moves each burst back to its start and predicts what
// the true demand does at 425m.
func TestReconstructRecoversBursts(t *testing.T) {
	arrived, used, thr := underQuota(60*time.Second, 50*time.Millisecond, 400*time.Millisecond, 37*time.Millisecond, 20*time.Millisecond)
	if thr[len(thr)-1] < 100 {
		t.Fatalf("the sampled group was throttled %d times: the test's kernel is wrong", thr[len(thr)-1])
	}
	rec, b := Reconstruct(used, thr, 100*time.Millisecond)
	if len(rec.At) != len(used.At) {
		t.Fatalf("%d readings reconstructed from %d", len(rec.At), len(used.At))
	}
	if rec.Work() != used.Work() {
		t.Errorf("work %s reconstructed from %s: it must be kept", rec.Work(), used.Work())
	}
	if b.Moved == 0 || b.Capped != 0 {
		t.Errorf("moved %s, capped %s", b.Moved, b.Capped)
	}
	at := []Point{{LimitMilli: 425, Period: 100 * time.Millisecond}}
	share := func(d *Demand) float64 {
		evs, err := Evaluate(d, at, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return evs[0].ThrottledRatio
	}
	truth, obs, got := share(arrived), share(used), share(rec)
	t.Logf("at 425m: true demand %.3f, observed use %.3f, reconstructed %.3f", truth, obs, got)
	if truth < 0.15 {
		t.Fatalf("the true demand is throttled %.3f at 425m: the test's premise is wrong", truth)
	}
	if obs > 0.05 {
		t.Errorf("observed use throttled %.3f at 425m: the premise (use hides the bursts) is wrong", obs)
	}
	if got < truth-0.05 || got > truth+0.1 {
		t.Errorf("reconstructed %.3f against the true %.3f", got, truth)
	}
}

// TestReconstructLeavesUnthrottledAlone: without throttling the demand is
// the use, reading for reading.
func TestReconstructLeavesUnthrottledAlone(t *testing.T) {
	_, used, thr := underQuota(10*time.Second, 50*time.Millisecond, 400*time.Millisecond, 37*time.Millisecond, 100*time.Millisecond)
	if thr[len(thr)-1] != 0 {
		t.Fatal("throttled under a full quota")
	}
	rec, b := Reconstruct(used, thr, 100*time.Millisecond)
	for i := range used.At {
		if rec.At[i] != used.At[i] || rec.Usage[i] != used.Usage[i] {
			t.Fatalf("reading %d: %v/%v from %v/%v", i, rec.At[i], rec.Usage[i], used.At[i], used.Usage[i])
		}
	}
	if b.Moved != 0 {
		t.Errorf("moved %s", b.Moved)
	}
}

// TestReconstructCapsLongStreaks: a group throttled in every period shows
// nothing of its demand above the limit; it is passed on as observed and
// counted.
func TestReconstructCapsLongStreaks(t *testing.T) {
	_, used, thr := underQuota(10*time.Second, 2*time.Second, 5*time.Second, 0, 20*time.Millisecond)
	rec, b := Reconstruct(used, thr, 100*time.Millisecond)
	if b.Capped < time.Second {
		t.Errorf("capped %s of a group throttled for 10 s", b.Capped)
	}
	if rec.Work() != used.Work() || len(rec.At) != len(used.At) {
		t.Errorf("work %s/%s, readings %d/%d", rec.Work(), used.Work(), len(rec.At), len(used.At))
	}
}

// TestReadRecordedReconstructs: a recorded run that was throttled (the
// report's fixture: the limited config at 1 CPU) is read with its
// throttled.csv, and the demand rebuilt, with a warning; the unlimited
// config's is left as used.
func TestReadRecordedReconstructs(t *testing.T) {
	dir := filepath.Join("..", "report", "testdata", "limits")
	lim, err := ReadRecorded(dir, "limited", "limited-0")
	if err != nil {
		t.Fatal(err)
	}
	if lim.CPUStat.ThrottledPeriods == 0 {
		t.Fatalf("the fixture's limited run was not throttled: %+v", lim.CPUStat)
	}
	if lim.Demand.Moved == 0 || !strings.Contains(strings.Join(lim.Demand.Warnings, " "), "reconstructed from its throttling counters") {
		t.Errorf("moved %s, warnings %q: want the throttled run rebuilt", lim.Demand.Moved, lim.Demand.Warnings)
	}
	unl, err := ReadRecorded(dir, "unlimited", "unlimited-0")
	if err != nil {
		t.Fatal(err)
	}
	if unl.Demand.Moved != 0 || len(unl.Demand.Warnings) != 0 {
		t.Errorf("unlimited run: moved %s, warnings %q", unl.Demand.Moved, unl.Demand.Warnings)
	}
}

// TestReconstructJitteredSample: one sample read 1.5 ms early shows a
// one-thread group at 1.18 CPUs; streaks are still found whole (a busy
// interval is one CPU's worth, not the highest use seen).
func TestReconstructJitteredSample(t *testing.T) {
	arrived, used, thr := underQuota(60*time.Second, 50*time.Millisecond, 400*time.Millisecond, 37*time.Millisecond, 20*time.Millisecond)
	k := -1
	for i := 2; i < len(used.At); i++ {
		if used.Usage[i]-used.Usage[i-1] == 10*time.Millisecond {
			k = i
			break
		}
	}
	used.At[k] -= 1500 * time.Microsecond
	if c := used.MaxCores(); c < 1.1 {
		t.Fatalf("the jittered sample reads %.2f CPUs", c)
	}
	used.Cores = 1
	rec, _ := Reconstruct(used, thr, 100*time.Millisecond)
	at := []Point{{LimitMilli: 425, Period: 100 * time.Millisecond}}
	truth, err := Evaluate(arrived, at, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Evaluate(rec, at, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := got[0].ThrottledRatio - truth[0].ThrottledRatio; d < -0.05 || d > 0.1 {
		t.Errorf("reconstructed %.3f against the true %.3f at 425m", got[0].ThrottledRatio, truth[0].ThrottledRatio)
	}
}

// TestReconstructKeepsBackgroundUse: a server with background work (0.2 and
// 0.5 ms every 10 ms) besides its bursts, sampled under 200m. Moved with
// the bursts, the background left the streaks' later periods idle: the
// replay at 400m counted 992 active periods where the true demand has 1201,
// and a throttled share of 0.271 against the true 0.200. The background
// (the median calm interval) now keeps arriving through each streak.
func TestReconstructKeepsBackgroundUse(t *testing.T) {
	at400 := []Point{{LimitMilli: 400, Period: 100 * time.Millisecond}}
	for _, bg := range []time.Duration{200 * time.Microsecond, 500 * time.Microsecond} {
		for _, every := range []time.Duration{400 * time.Millisecond, 397 * time.Millisecond} {
			arrived, used, thr := underQuotaBG(100*time.Microsecond, 120*time.Second, 50*time.Millisecond, every, 37*time.Millisecond, 20*time.Millisecond, bg)
			rec, b := Reconstruct(used, thr, 100*time.Millisecond)
			if b.Moved == 0 {
				t.Fatalf("bg %s every %s: nothing moved", bg, every)
			}
			truth, err := Evaluate(arrived, at400, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := Evaluate(rec, at400, Options{})
			if err != nil {
				t.Fatal(err)
			}
			tr, gr := truth[0], got[0]
			if math.Abs(gr.ThrottledRatio-tr.ThrottledRatio) > 0.03 || math.Abs(gr.Periods-tr.Periods) > 0.08*tr.Periods {
				t.Errorf("bg %s every %s at 400m: rebuilt %.3f (%.0f periods), true demand %.3f (%.0f periods)", bg, every, gr.ThrottledRatio, gr.Periods, tr.ThrottledRatio, tr.Periods)
			}
		}
	}
}

// TestDerivedDemandsReplayAsTheirSource: the blocks and the level replays
// of a rebuilt demand serve its moved work as arrivals too; dropped there,
// each block replayed a one-thread burst within one sample (0.333 at 425m
// where the whole window, on its one CPU, gives 0.200), and the interval
// reached far above the estimate of stationary bursts.
func TestDerivedDemandsReplayAsTheirSource(t *testing.T) {
	_, used, thr := underQuota(60*time.Second, 50*time.Millisecond, 400*time.Millisecond, 37*time.Millisecond, 20*time.Millisecond)
	rec, _ := Reconstruct(used, thr, 100*time.Millisecond)
	if !rec.Arrivals {
		t.Fatal("the rebuilt demand is not marked as arrivals")
	}
	for i, sub := range append(splitBlocks(rec, 3), scaled(rec, 1+LevelSpread)) {
		if !sub.Arrivals || sub.Cores != int(rec.cores()) {
			t.Errorf("derived demand %d: arrivals %v, cores %d: want true, %d", i, sub.Arrivals, sub.Cores, int(rec.cores()))
		}
	}
	a, err := Advise(rec, Request{Limits: []int64{425}}, Sampled{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range a.Evaluations {
		if e.LimitMilli == 425 && e.BurstMilli == 0 {
			if e.ThrottledRatioRange[1] > e.ThrottledRatio+0.06 {
				t.Errorf("425m: %.3f, interval %v: the blocks of stationary bursts disagree", e.ThrottledRatio, *e.ThrottledRatioRange)
			}
			return
		}
	}
	t.Fatal("425m not evaluated")
}

// TestReportSectionAdvisesAsAdviseDoes: a report's advice section reads a
// throttled run as advise RESULTS_DIR does (its demand rebuilt from the
// throttling counters), so both give the same answer. Before they shared
// FromRun, the section replayed the throttled use as it was and advised a
// smaller limit than advise did for the same run.
func TestReportSectionAdvisesAsAdviseDoes(t *testing.T) {
	dir := filepath.Join("..", "report", "testdata", "limits")
	set, err := report.ReadSet([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	section := html.UnescapeString(string(ReportSection(set.Sources)))
	for _, c := range []struct{ config, instance string }{{"limited", "limited-0"}, {"unlimited", "unlimited-0"}} {
		rec, err := ReadRecorded(dir, c.config, c.instance)
		if err != nil {
			t.Fatal(err)
		}
		a, err := Advise(rec.Demand, Request{}, Sampled{CPUStat: rec.CPUStat, LimitMilli: rec.LimitMilli})
		if err != nil {
			t.Fatal(err)
		}
		if want := Answer(a); !strings.Contains(section, want) {
			t.Errorf("config %s: advise says %q; the report's section does not:\n%s", c.config, want, section)
		}
	}
	if !strings.Contains(section, "rebuilt from the throttling counters") {
		t.Errorf("the section does not say the throttled run's demand was rebuilt:\n%s", section)
	}
}
