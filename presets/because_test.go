package presets

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/verdict"
)

// f14Recorded is F14's quick variant, recorded for real on the 2-CPU
// reference machine on 2026-11-28 (throttlelab run f14-pinning --quick,
// under the host lock), trimmed to the files a check reads: the runs'
// summaries and request records.
const f14Recorded = "testdata/f14-quick"

// rawFigures recomputes one config's figures from the recording's files
// directly (JSON and CSV, not the record package), so that a wrong sum in
// Groups cannot pass by agreeing with itself.
func rawFigures(t *testing.T, dir, config string) (periods, throttled uint64, meanCores, waitMs float64) {
	t.Helper()
	runs, err := filepath.Glob(filepath.Join(dir, "runs", config, "*", "r*"))
	if err != nil || len(runs) == 0 {
		t.Fatalf("no runs of %s in %s (%v)", config, dir, err)
	}
	var cores []float64
	var wait float64
	n := 0
	for _, run := range runs {
		b, err := os.ReadFile(filepath.Join(run, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Total struct {
				Periods   uint64 `json:"nr_periods"`
				Throttled uint64 `json:"nr_throttled"`
			} `json:"cpu_stat_total"`
			Usage map[string]struct {
				Mean float64 `json:"mean"`
			} `json:"usage_cores"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		periods += s.Total.Periods
		throttled += s.Total.Throttled
		for _, u := range s.Usage {
			cores = append(cores, u.Mean)
		}
		f, err := os.Open(filepath.Join(run, "requests.csv"))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		col := map[string]int{}
		for i, h := range rows[0] {
			col[h] = i
		}
		num := func(row []string, h string) float64 {
			v, err := strconv.ParseFloat(row[col[h]], 64)
			if err != nil {
				t.Fatalf("%s: %s %q: %v", run, h, row[col[h]], err)
			}
			return v
		}
		for _, row := range rows[1:] {
			cpu, wall := num(row, "server_cpu_ns"), num(row, "server_wall_ns")
			if row[col["error"]] != "" || cpu < 0 || wall < 0 {
				continue
			}
			wait += max(wall-cpu-max(num(row, "server_queue_ns"), 0), 0) / 1e6
			n++
		}
	}
	for _, c := range cores {
		meanCores += c
	}
	return periods, throttled, meanCores / float64(len(cores)), wait / float64(n)
}

// TestBecauseRecordedF14 computes the explanation of a recorded F14 cell and
// checks every figure in it against the recording's files, read directly,
// and against the figures read off the recording by hand.
func TestBecauseRecordedF14(t *testing.T) {
	r, err := ReadResults(f14Recorded)
	if err != nil {
		t.Fatal(err)
	}
	gs := r.Groups()
	if len(gs) != 2 || gs[0].Config != "shared" || gs[1].Config != "pinned" {
		t.Fatalf("groups %+v: want shared then pinned, no neighbours", gs)
	}
	for _, g := range gs {
		periods, throttled, mean, wait := rawFigures(t, f14Recorded, g.Config)
		if g.Periods != periods || g.Throttled != throttled {
			t.Errorf("%s: %d of %d periods throttled, the files say %d of %d", g.Config, g.Throttled, g.Periods, throttled, periods)
		}
		if math.Abs(g.MeanCores-mean) > 1e-9 || math.Abs(g.WaitMs-wait) > 1e-9 {
			t.Errorf("%s: %.4f cores, %.4f ms wait; the files say %.4f, %.4f", g.Config, g.MeanCores, g.WaitMs, mean, wait)
		}
	}
	// Read off the recording by hand: the shared pool throttled in all 184
	// of its periods with a 1-CPU limit on any CPU; the pinned container had
	// no quota and ran on CPU 1; both waited about 160 ms per request and
	// used one core.
	want := []string{
		"shared: throttled in 100% of periods (184 of 184), 161 ms run-queue wait per request, on any of the 2 CPUs, 1.00 cores used of its 1.00-CPU limit",
		"pinned: no quota, no periods, 165 ms run-queue wait per request, on CPUs 1, 1.00 cores used",
	}
	got := because(r)
	if !strings.HasPrefix(got, "Measured: ") {
		t.Errorf("because = %q: want it to say the figures were measured", got)
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("because = %q\nwant it to contain %q", got, w)
		}
	}
}

// TestEvaluateCarriesBecause checks that a cell that did not pass carries
// the computed figures in its why, after the preset's own reading.
func TestEvaluateCarriesBecause(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(f14Recorded)); err != nil {
		t.Fatal(err)
	}
	v, err := f14Pinning.Evaluate(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if v.Outcome == verdict.Reproduced {
		t.Fatalf("the recording reproduces F14 (%s): the test needs a cell that did not pass", v.Numbers)
	}
	r, err := ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := because(r)
	if b == "" || !strings.HasSuffix(v.Why, b) {
		t.Errorf("why = %q\nwant it to end with the computed figures %q", v.Why, b)
	}
	if !strings.Contains(v.Line(), "Why: ") {
		t.Errorf("line %q does not carry the why", v.Line())
	}
}

// TestAgreementRecordedF14 compares the recorded F14 run with its simulated
// twin (throttlelab sim --compare on the recording, trimmed alike): the model
// throttled the shared pool in all its periods too and kept both waits
// within 25% (182 and 184 ms against 161 and 165), so it agrees; with the
// twin's throttling taken away it must say where it differs.
func TestAgreementRecordedF14(t *testing.T) {
	m, err := ReadResults(f14Recorded)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadResults(f14Recorded + "-sim")
	if err != nil {
		t.Fatal(err)
	}
	if s.Env.Backend != "sim" || !strings.HasPrefix(because(s), "The model: ") {
		t.Fatalf("the twin's backend is %q and its why %q: want the simulator's", s.Env.Backend, because(s))
	}
	if got, want := Agreement(m, s), "the model agrees on every group's throttling, run-queue wait and use (shared, pinned)"; got != want {
		t.Errorf("Agreement = %q, want %q", got, want)
	}
	// What sim --compare prints after a preset's twin; nothing without one.
	var b, none strings.Builder
	if err := (&Info{Preset: "f14-pinning"}).WriteAgreement(&b, f14Recorded, f14Recorded+"-sim"); err != nil {
		t.Fatal(err)
	}
	if err := (*Info)(nil).WriteAgreement(&none, f14Recorded, f14Recorded+"-sim"); err != nil || none.Len() > 0 {
		t.Errorf("no preset: wrote %q, %v; want nothing", none.String(), err)
	}
	if got := b.String(); got != Agreement(m, s)+"\n" {
		t.Errorf("WriteAgreement wrote %q, want Agreement's line", got)
	}
	for _, run := range s.runsOf("shared") {
		run.Total.ThrottledPeriods = 0
	}
	if got, want := Agreement(m, s), "the model differs: shared throttled in 100% of periods, the model 0%"; got != want {
		t.Errorf("Agreement without the twin's throttling = %q, want %q", got, want)
	}
}

// f06Recorded is F6's quick variant, recorded for real on the 2-CPU
// reference machine on 2026-11-28 under the host lock, trimmed to its first
// repeat's summaries and request records.
const f06Recorded = "testdata/f06-quick"

// TestBecauseRecordedF6Neighbours checks the neighbours' figures in the
// explanation of a recorded F6 cell against the run summaries, read
// directly, and against what its bursts ask by the spec (1 worker busy
// 300 ms of every second: 0.30 cores).
func TestBecauseRecordedF6Neighbours(t *testing.T) {
	r, err := ReadResults(f06Recorded)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, g := range r.Groups() {
		if g.Name == "" {
			continue
		}
		seen++
		runs, err := filepath.Glob(filepath.Join(f06Recorded, "runs", g.Config, "*", "r*", "summary.json"))
		if err != nil || len(runs) == 0 {
			t.Fatalf("no runs of %s (%v)", g.Config, err)
		}
		var periods, throttled uint64
		var mean float64
		n := 0
		for _, path := range runs {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var s struct {
				Stat map[string]struct {
					Periods   uint64 `json:"nr_periods"`
					Throttled uint64 `json:"nr_throttled"`
				} `json:"neighbour_cpu_stat"`
				Usage map[string]struct {
					Mean float64 `json:"mean"`
				} `json:"neighbour_usage_cores"`
			}
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			for k, u := range s.Usage {
				if strings.HasSuffix(k, "-n-"+g.Name) {
					mean += u.Mean
					periods += s.Stat[k].Periods
					throttled += s.Stat[k].Throttled
					n++
				}
			}
		}
		if n == 0 || g.Periods != periods || g.Throttled != throttled || math.Abs(g.MeanCores-mean/float64(n)) > 1e-9 {
			t.Errorf("%s's %s: %d of %d periods, %.4f cores; the files say %d of %d, %.4f (%d pods)", g.Config, g.Name, g.Throttled, g.Periods, g.MeanCores, throttled, periods, mean/float64(max(n, 1)), n)
		}
		if math.Abs(g.Asks-0.3) > 1e-9 {
			t.Errorf("%s's %s asks %.3f cores, want 0.30 (1 worker, 300 ms busy, 700 ms asleep)", g.Config, g.Name, g.Asks)
		}
	}
	if seen != 4 {
		t.Errorf("%d neighbour groups, want 4 (2 noise pods beside each noise config)", seen)
	}
	// Read off the recording by hand.
	for _, w := range []string{
		"noise's noise-0 (each pod): no quota, no periods, on any of the 2 CPUs, 0.27 cores used against 0.30 its bursts ask;",
		"noise-limited's noise-0 (each pod): throttled in 38% of periods (19 of 50), on any of the 2 CPUs, 0.23 cores used against 0.30 its bursts ask and its 0.75-CPU limit;",
		"noise-limited's noise-1 (each pod): throttled in 30% of periods (15 of 50), on any of the 2 CPUs, 0.24 cores used against 0.30 its bursts ask and its 0.75-CPU limit",
	} {
		if got := because(r); !strings.Contains(got, w) {
			t.Errorf("because = %q\nwant it to contain %q", got, w)
		}
	}
}
