package main

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/throttlelab/throttlelab/stats"
)

// adviseOut is what the table reads of advise's JSON.
type adviseOut struct {
	RecMilli   int64
	RecSetting string
	RecValue   int
	SetRec     bool
	Why        string
	// Own is the replay at the run's own limit: the self-audit's share,
	// and the grid row's interval and p99 added delay.
	OwnShare      float64
	OwnShareRange [2]float64
	OwnDelayP99   float64
	HasOwn        bool
}

func readAdvise(dir string) (adviseOut, error) {
	var a adviseOut
	b, err := os.ReadFile(filepath.Join(dir, "advise.json"))
	if err != nil {
		return a, err
	}
	var doc struct {
		Recommendation struct {
			LimitMilli int64 `json:"limit_millicores"`
		} `json:"recommendation"`
		Evaluations []struct {
			LimitMilli int64       `json:"limit_millicores"`
			BurstMilli int64       `json:"burst_millicores"`
			Ratio      float64     `json:"throttled_periods_ratio"`
			Range      *[2]float64 `json:"throttled_periods_ratio_range"`
			DelayP99   float64     `json:"added_delay_p99_ms"`
		} `json:"evaluations"`
		Audit *struct {
			Predicted float64 `json:"predicted_throttled_periods_ratio"`
		} `json:"audit"`
		Runtime *struct {
			Recommended        int    `json:"parallelism_recommended"`
			RecommendedSetting string `json:"recommended_setting"`
			SetRecommended     bool   `json:"set_recommended"`
			Why                string `json:"why"`
		} `json:"runtime"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return a, fmt.Errorf("%s/advise.json: %w", dir, err)
	}
	a.RecMilli = doc.Recommendation.LimitMilli
	if doc.Runtime != nil {
		a.RecSetting, a.RecValue, a.SetRec, a.Why = doc.Runtime.RecommendedSetting, doc.Runtime.Recommended, doc.Runtime.SetRecommended, doc.Runtime.Why
	}
	r, err := readRun(dir)
	if err != nil {
		return a, err
	}
	for _, e := range doc.Evaluations {
		if e.LimitMilli == r.LimitMilli && e.BurstMilli == 0 {
			a.HasOwn, a.OwnShare, a.OwnDelayP99 = true, e.Ratio, e.DelayP99
			a.OwnShareRange = [2]float64{e.Ratio, e.Ratio}
			if e.Range != nil {
				a.OwnShareRange = *e.Range
			}
		}
	}
	if doc.Audit != nil && a.HasOwn {
		a.OwnShare = doc.Audit.Predicted
	}
	return a, nil
}

func readRun(dir string) (runResult, error) {
	var r runResult
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(b, &r)
}

// latencies reads the requests the load sent while advise sampled
// (intended from 5 s to 5 s + the sampling), in ms, and how many failed.
func latencies(dir string, s runSpec) ([]float64, int, error) {
	f, err := os.Open(filepath.Join(dir, "load", "requests.csv"))
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	head, err := cr.Read()
	if err != nil {
		return nil, 0, err
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	lo, hi := 5e9, (5+s.Seconds)*1e9
	var v []float64
	failed := 0
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, err
		}
		at, _ := strconv.ParseFloat(rec[col["intended_ns"]], 64)
		if at < lo || at >= hi {
			continue
		}
		lat, _ := strconv.ParseFloat(rec[col["latency_ns"]], 64)
		if rec[col["status"]] != "200" || rec[col["error"]] != "" {
			failed++
		}
		v = append(v, lat/1e6)
	}
	return v, failed, nil
}

// row is one run read back.
type row struct {
	r      runResult
	a      adviseOut
	sample *stats.Sample
	failed int
}

func tableCmd(args []string) error {
	if len(args) == 0 {
		return errors.New("table DIR...: the --out directories of the run step")
	}
	var rows []row
	for _, out := range args {
		dirs, _ := filepath.Glob(filepath.Join(out, "run-*"))
		for _, d := range dirs {
			r, err := readRun(d)
			if err != nil {
				fmt.Fprintf(os.Stderr, "measure: %s left out: %v\n", d, err)
				continue
			}
			a, err := readAdvise(d)
			if err != nil {
				return err
			}
			v, failed, err := latencies(d, r.runSpec)
			if err != nil {
				return err
			}
			rows = append(rows, row{r: r, a: a, sample: stats.NewSample(v), failed: failed})
		}
	}
	slices.SortFunc(rows, func(x, y row) int {
		if c := strings.Compare(x.r.Runtime, y.r.Runtime); c != 0 {
			return c
		}
		if x.r.LimitMilli != y.r.LimitMilli {
			return int(x.r.LimitMilli - y.r.LimitMilli)
		}
		if x.r.Shares != y.r.Shares {
			return x.r.Shares - y.r.Shares
		}
		if x.r.Setting != y.r.Setting {
			return x.r.Setting - y.r.Setting
		}
		return x.r.Round - y.r.Round
	})
	fmt.Println("| service | limit | setting | round | start (UTC) | load average (1 min, start/end) | requests (failed) | predicted throttled share [interval] | kernel's share (periods) | within max(0.07, 30%) of the interval / of the point | predicted p99 added delay (ms) | measured p99 (ms) [95% interval] | measured p50 (ms) | advice: limit, setting |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	within, total := 0, 0
	for _, x := range rows {
		kern := float64(x.r.KernelThrottle) / math.Max(1, float64(x.r.KernelPeriods))
		in := "-"
		if x.a.HasOwn && x.r.LimitMilli > 0 {
			w := math.Max(0.07, 0.3*x.a.OwnShare)
			ok := kern >= x.a.OwnShareRange[0]-w && kern <= x.a.OwnShareRange[1]+w
			yes := map[bool]string{true: "yes", false: "no"}
			// The interval widened, and (stricter) the point widened.
			in = yes[ok] + " / " + yes[math.Abs(kern-x.a.OwnShare) <= w]
			total++
			if ok {
				within++
			}
		}
		p99 := stats.Quantile(99).Of(x.sample)
		iv := runInterval([]*stats.Sample{x.sample}, p99)
		round := strconv.Itoa(x.r.Round)
		if x.r.Shares > 0 {
			round += fmt.Sprintf(", cpu.shares %d", x.r.Shares)
		}
		fmt.Printf("| %s | %dm | %s | %s | %s | %s / %s | %d (%d) | %.1f%% [%.1f-%.1f%%] | %.1f%% (%d) | %s | %.0f | %.0f [%.0f-%.0f] | %.1f | %dm, %s%s |\n",
			x.r.Runtime, x.r.LimitMilli, spell(x.r.Runtime, x.r.Setting), round, x.r.Start.Format("15:04"), first(x.r.LoadavgStart), first(x.r.LoadavgEnd),
			len(x.sample.Sorted), x.failed, 100*x.a.OwnShare, 100*x.a.OwnShareRange[0], 100*x.a.OwnShareRange[1], 100*kern, x.r.KernelPeriods, in,
			x.a.OwnDelayP99, p99, iv[0], iv[1], stats.Quantile(50).Of(x.sample), x.a.RecMilli, x.a.RecSetting, map[bool]string{true: " (set)", false: ""}[x.a.SetRec])
	}
	fmt.Printf("\nkernel's share within the predicted interval widened by max(0.07, 30%%): %d of %d\n\n", within, total)
	comparePooled(rows)
	return nil
}

func first(l string) string {
	f := strings.Fields(l)
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

func spell(rt string, n int) string {
	if rt == "jvm" {
		return fmt.Sprintf("-XX:ActiveProcessorCount=%d", n)
	}
	return fmt.Sprintf("GOMAXPROCS=%d", n)
}

// runInterval is the 95% bootstrap interval of the p99 over one group's
// runs (runs as repeat slots, requests within each).
func runInterval(runs []*stats.Sample, point float64) stats.Interval {
	d := stats.Resample([][]*stats.Sample{runs}, stats.Quantile(99), stats.Resamples, stats.BootstrapSeed)
	iv, _ := stats.PercentileInterval(d[0], point)
	return iv
}

// comparePooled prints, per runtime and limit, each setting's p99 over its
// runs (the median of the runs' p99s) with its interval, and the paired
// difference of the recommended setting against each other setting: the
// recommended one is no worse where that difference's interval reaches 0
// or below.
func comparePooled(rows []row) {
	type key struct {
		rt     string
		limit  int64
		shares int
	}
	var keys []key
	by := map[key]map[int]map[int]*stats.Sample{} // setting -> round -> sample
	rec := map[key]map[int]int{}                  // recommended value -> count of runs advising it
	for _, x := range rows {
		k := key{x.r.Runtime, x.r.LimitMilli, x.r.Shares}
		if by[k] == nil {
			keys = append(keys, k)
			by[k] = map[int]map[int]*stats.Sample{}
			rec[k] = map[int]int{}
		}
		if by[k][x.r.Setting] == nil {
			by[k][x.r.Setting] = map[int]*stats.Sample{}
		}
		by[k][x.r.Setting][x.r.Round] = x.sample
		rec[k][x.a.RecValue]++
	}
	for _, k := range keys {
		var settings, rounds []int
		for s, rs := range by[k] {
			settings = append(settings, s)
			for r := range rs {
				if !slices.Contains(rounds, r) {
					rounds = append(rounds, r)
				}
			}
		}
		slices.Sort(settings)
		slices.Sort(rounds)
		groups := make([][]*stats.Sample, len(settings))
		for i, s := range settings {
			groups[i] = make([]*stats.Sample, len(rounds))
			for j, r := range rounds {
				groups[i][j] = by[k][s][r]
			}
		}
		d := stats.Resample(groups, stats.Quantile(99), stats.Resamples, stats.BootstrapSeed)
		want, most := 0, 0
		for v, c := range rec[k] {
			if c > most || c == most && v < want {
				want, most = v, c
			}
		}
		fmt.Printf("%s under %dm, cpu.shares %d (%d rounds; advised value in most runs: %s):\n", k.rt, k.limit, max(k.shares, 1024), len(rounds), spell(k.rt, want))
		ri := slices.Index(settings, want)
		for i, s := range settings {
			var ps []float64
			for _, smp := range groups[i] {
				if smp != nil {
					ps = append(ps, stats.Quantile(99).Of(smp))
				}
			}
			pt := stats.Median(ps)
			iv, _ := stats.PercentileInterval(d[i], pt)
			fmt.Printf("  %s: p99 %.0f ms [%.0f-%.0f]", spell(k.rt, s), pt, iv[0], iv[1])
			if ri >= 0 && i != ri {
				diff := stats.Difference(d[ri], d[i])
				div, _ := stats.PercentileInterval(diff, math.NaN())
				verdict := "no worse"
				if div[0] > 0 {
					verdict = "WORSE"
				}
				fmt.Printf("; advised minus this: [%+.0f, %+.0f] ms: advised %s", div[0], div[1], verdict)
			}
			fmt.Println()
		}
		for i := range settings {
			for j := i + 1; j < len(settings); j++ {
				div, _ := stats.PercentileInterval(stats.Difference(d[i], d[j]), math.NaN())
				fmt.Printf("  p99 %s minus %s: [%+.0f, %+.0f] ms\n", spell(k.rt, settings[i]), spell(k.rt, settings[j]), div[0], div[1])
			}
		}
	}
}

// boundsCmd compares, per run under a limit, the p99 added delay advise
// predicted at the run's own limit from its samples rebuilt from the
// throttling counters (what the table shows), the same samples replayed
// as sampled (the sum of their per-CPU columns: --save-csv writes the
// rebuilt usage beside the raw per-CPU counters), the unlimited
// calibration run's samples replayed at the same limit (a demand no limit
// hid), and the measured p99 latency beside the calibration's unlimited
// one.
func boundsCmd(args []string) error {
	if len(args) < 2 {
		return errors.New("bounds BIN DIR...: the throttlelab binary and the --out directories (the first holding calibration.json's runs)")
	}
	bin := args[0]
	cal := map[string]string{}
	for _, out := range args[1:] {
		dirs, _ := filepath.Glob(filepath.Join(out, "calibrate-*"))
		for _, d := range dirs {
			if r, err := readRun(d); err == nil {
				cal[r.Runtime] = d
			}
		}
	}
	fmt.Println("| service | limit | setting | round | load average | p99 added delay rebuilt (ms) | as sampled (ms) | unlimited run's samples at this limit (ms) | measured p99 (ms) | unlimited run's measured p99 (ms) |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, out := range args[1:] {
		dirs, _ := filepath.Glob(filepath.Join(out, "run-*"))
		for _, d := range dirs {
			r, err := readRun(d)
			if err != nil || r.LimitMilli == 0 {
				continue
			}
			a, err := readAdvise(d)
			if err != nil {
				return err
			}
			lim := fmt.Sprintf("%dm", r.LimitMilli)
			raw, err := rawCSV(d)
			if err != nil {
				return err
			}
			asSampled, err := replayCSV(bin, raw, lim, r.Cores)
			if err != nil {
				return err
			}
			unl, unlP99 := math.NaN(), math.NaN()
			if c, ok := cal[r.Runtime]; ok {
				if unl, err = replayCSV(bin, filepath.Join(c, "samples.csv"), lim, r.Cores); err != nil {
					return err
				}
				cr, _ := readRun(c)
				v, _, err := latencies(c, cr.runSpec)
				if err != nil {
					return err
				}
				unlP99 = stats.Quantile(99).Of(stats.NewSample(v))
			}
			v, _, err := latencies(d, r.runSpec)
			if err != nil {
				return err
			}
			round := strconv.Itoa(r.Round)
			if r.Shares > 0 {
				round += fmt.Sprintf(", cpu.shares %d", r.Shares)
			}
			fmt.Printf("| %s | %s | %s | %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f |\n", r.Runtime, lim, spell(r.Runtime, r.Setting), round, first(r.LoadavgStart),
				a.OwnDelayP99, asSampled, unl, stats.Quantile(99).Of(stats.NewSample(v)), unlP99)
		}
	}
	return nil
}

// replayCSV is advise's p99 added delay at limit for the samples in csv.
func replayCSV(bin, csvPath, limit string, cores int) (float64, error) {
	out, err := exec.Command(bin, "advise", "--csv", csvPath, "--limit", limit, "--cores", strconv.Itoa(cores), "-o", "json").Output()
	if err != nil && len(out) == 0 {
		return 0, fmt.Errorf("advise --csv %s: %w", csvPath, err)
	}
	var doc struct {
		Evaluations []struct {
			LimitMilli int64   `json:"limit_millicores"`
			BurstMilli int64   `json:"burst_millicores"`
			DelayP99   float64 `json:"added_delay_p99_ms"`
		} `json:"evaluations"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return 0, fmt.Errorf("advise --csv %s: %w", csvPath, err)
	}
	want, _ := strconv.ParseInt(strings.TrimSuffix(limit, "m"), 10, 64)
	for _, e := range doc.Evaluations {
		if e.LimitMilli == want && e.BurstMilli == 0 {
			return e.DelayP99, nil
		}
	}
	return 0, fmt.Errorf("advise --csv %s: no row at %s", csvPath, limit)
}

// rawCSV writes DIR/samples-raw.csv: samples.csv's time and the sum of its
// per-CPU columns as the usage (the counters as read, not rebuilt).
func rawCSV(dir string) (string, error) {
	in, err := os.Open(filepath.Join(dir, "samples.csv"))
	if err != nil {
		return "", err
	}
	defer in.Close()
	cr := csv.NewReader(in)
	head, err := cr.Read()
	if err != nil {
		return "", err
	}
	if len(head) < 3 {
		return "", fmt.Errorf("%s/samples.csv has no per-CPU columns", dir)
	}
	path := filepath.Join(dir, "samples-raw.csv")
	out, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer out.Close()
	fmt.Fprintln(out, "time_ns,usage_ns")
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", err
		}
		var sum int64
		for _, c := range rec[2:] {
			v, _ := strconv.ParseInt(c, 10, 64)
			sum += v
		}
		fmt.Fprintf(out, "%s,%d\n", rec[0], sum)
	}
	return path, out.Close()
}
