package report

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/stats"
)

// distribution is the share of requests per logarithmic latency bin (20 bins
// a decade), in percent, drawn at each bin's centre.
func distribution(lat []float64) []Point {
	if len(lat) == 0 {
		return nil
	}
	const perDecade = 20
	bin := func(v float64) int { return int(math.Floor(math.Log10(math.Max(v, 1e-3)) * perDecade)) }
	lo, hi := bin(lat[0]), bin(lat[len(lat)-1])
	counts := make([]int, hi-lo+1)
	for _, v := range lat {
		counts[bin(v)-lo]++
	}
	// One empty bin each side, so every line starts and ends at zero.
	pts := []Point{{math.Pow(10, (float64(lo)-0.5)/perDecade), 0}}
	for i, c := range counts {
		pts = append(pts, Point{math.Pow(10, (float64(lo+i)+0.5)/perDecade), 100 * float64(c) / float64(len(lat))})
	}
	return append(pts, Point{math.Pow(10, (float64(hi)+1.5)/perDecade), 0})
}

// percentiles samples the latency distribution evenly on the nines scale, up to
// the percentile where one request is left, and ends at the maximum.
func percentiles(lat []float64) []Point {
	n := len(lat)
	if n == 0 {
		return nil
	}
	top := math.Log10(float64(n))
	var pts []Point
	const steps = 200
	for i := 0; i <= steps; i++ {
		x := top * float64(i) / steps
		p := 100 * (1 - math.Pow(10, -x))
		pts = append(pts, Point{p, stats.Percentile(lat, p)})
	}
	return append(pts, Point{100 * (1 - 0.5/float64(n)), lat[n-1]})
}

func latencyCharts(es []*entry, load string, id string) []*Chart {
	var refs []*entry
	for _, e := range es {
		if e.load.Name == load && e.ref && e.srcIdx == 0 {
			refs = append(refs, e)
		}
	}
	var charts []*Chart
	// One chart per config name; sources of the same config share it, so a
	// simulated and a measured run of one spec are drawn over each other.
	var names []string
	for _, e := range es {
		if e.load.Name == load && !slices.Contains(names, e.config.Name) {
			names = append(names, e.config.Name)
		}
	}
	for ni, name := range names {
		c := &Chart{ID: fmt.Sprintf("%s-dist-%d", id, ni), Title: "Latency distribution: " + name,
			X: Axis{Label: "latency (ms, log scale)", Log: true}, Y: Axis{Label: "requests (% per bin, 20 bins a decade)"}}
		isRef := false
		for _, r := range refs {
			if r.config.Name == name {
				isRef = true
			}
		}
		if !isRef {
			for _, r := range refs {
				for k, run := range r.runs {
					c.Series = append(c.Series, Series{Name: r.label, NoLegend: k > 0, Points: distribution(okLatencies([]*Run{run})),
						Color: refColor, Width: 7, Opacity: 0.55})
				}
			}
		}
		for _, e := range es {
			if e.load.Name != load || e.config.Name != name {
				continue
			}
			for k, run := range e.runs {
				c.Series = append(c.Series, Series{Name: fmt.Sprintf("%s (%d repeats)", e.label, len(e.runs)), NoLegend: k > 0,
					Points: distribution(okLatencies([]*Run{run})), Color: e.color, Dash: e.dash, Width: 1.5})
			}
		}
		charts = append(charts, c)
	}
	return charts
}

func percentileChart(es []*entry, load, id string) *Chart {
	c := &Chart{ID: id + "-pct", Title: "Latency by percentile, all configs (repeats merged)",
		X: Axis{Label: "percentile", Nines: true}, Y: Axis{Label: "latency (ms, log scale)", Log: true}, Width: 760, Height: 380}
	for _, e := range es {
		if e.load.Name != load {
			continue
		}
		s := Series{Name: e.label, Points: percentiles(okLatencies(e.runs)), Color: e.color, Dash: e.dash, Width: 2}
		s.Lower, s.Upper = percentileBand(e, s.Points)
		if e.ref && e.srcIdx == 0 {
			s.Color, s.Width, s.Opacity, s.Dash = refColor, 7, 0.6, ""
		}
		c.Series = append(c.Series, s)
	}
	// The reference first, so it lies behind the rest.
	slices.SortStableFunc(c.Series, func(a, b Series) int {
		return boolInt(b.Color == refColor) - boolInt(a.Color == refColor)
	})
	return c
}

// bandResamples is how many bootstrap resamples draw each point of a
// percentile band (fewer than the summary's 1000: a band has 200 points).
const bandResamples = 200

// percentileBand is the 95% interval of each point of an entry's percentile
// curve, by the summary's hierarchical bootstrap (stats.Resample: repeats,
// then requests); the last point, the maximum, has none.
func percentileBand(e *entry, pts []Point) (lo, hi []Point) {
	var runs []*stats.Sample
	for _, r := range e.runs {
		runs = append(runs, stats.NewSample(okLatencies([]*Run{r})))
	}
	groups := [][]*stats.Sample{runs}
	lo, hi = make([]Point, len(pts)), make([]Point, len(pts))
	// Each point's resamples are seeded on their own: the points are
	// drawn at once, a share of them on each CPU.
	n := min(runtime.GOMAXPROCS(0), len(pts))
	var todo []func()
	for w := range n {
		todo = append(todo, func() {
			for i := w; i < len(pts); i += n {
				p := pts[i]
				l, h := p.Y, p.Y
				if i < len(pts)-1 && p.X > 0 {
					d := stats.Resample(groups, stats.Quantile(p.X), bandResamples, stats.BootstrapSeed)
					if iv, ok := stats.PercentileInterval(d[0], p.Y); ok {
						l, h = iv[0], iv[1]
					}
				}
				lo[i], hi[i] = Point{p.X, l}, Point{p.X, h}
			}
		})
	}
	runAll(todo)
	return lo, hi
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rampCharts draws p99 and throughput against the number of workers, one line
// per config (medians over repeats).
func rampCharts(es []*entry, load, id string) []*Chart {
	p99 := &Chart{ID: id + "-ramp-p99", Title: "p99 latency against workers", X: Axis{Label: "closed-loop workers"}, Y: Axis{Label: "p99 latency (ms, log scale)", Log: true}}
	tput := &Chart{ID: id + "-ramp-rps", Title: "Throughput against workers", X: Axis{Label: "closed-loop workers"}, Y: Axis{Label: "throughput (requests/s)"}}
	for _, e := range es {
		if e.load.Name != load || len(e.runs) == 0 {
			continue
		}
		steps := len(e.runs[0].Summary.Steps)
		var a, b []Point
		for i := 0; i < steps; i++ {
			var ps, ts []float64
			workers := 0
			for _, r := range e.runs {
				if i < len(r.Summary.Steps) {
					workers = r.Summary.Steps[i].Workers
					ps, ts = append(ps, r.Summary.Steps[i].P99Ms), append(ts, r.Summary.Steps[i].ThroughputRPS)
				}
			}
			a, b = append(a, Point{float64(workers), stats.Median(ps)}), append(b, Point{float64(workers), stats.Median(ts)})
		}
		color, width := e.color, 2.0
		if e.ref {
			color, width = refColor, 6
		}
		p99.Series = append(p99.Series, Series{Name: e.label, Points: a, Color: color, Dash: e.dash, Width: width})
		tput.Series = append(tput.Series, Series{Name: e.label, Points: b, Color: color, Dash: e.dash, Width: width})
	}
	return []*Chart{p99, tput}
}

// stairs returns, for consecutive windows, a point at each window's start and
// end with the window's mean cores, so the line is flat over the window.
func stairs(g GroupUsage, window time.Duration) []Point {
	var pts []Point
	j := 0
	for k := 1; k < len(g.At); k++ {
		if g.At[k]-g.At[j] < window*95/100 && k != len(g.At)-1 {
			continue
		}
		span := g.At[k] - g.At[j]
		if span <= 0 {
			continue
		}
		cores := float64(g.Usage[k]-g.Usage[j]) / float64(span)
		pts = append(pts, Point{g.At[j].Seconds(), cores}, Point{g.At[k].Seconds(), cores})
		j = k
	}
	return pts
}

// throttleMarks marks the sampling intervals in which the group's count of
// throttled periods grew.
func throttleMarks(g GroupUsage) []Mark {
	var m []Mark
	for k := 1; k < len(g.Throttled); k++ {
		if g.Throttled[k] > g.Throttled[k-1] {
			if n := len(m); n > 0 && m[n-1].X1 == g.At[k-1].Seconds() {
				m[n-1].X1 = g.At[k].Seconds()
				continue
			}
			m = append(m, Mark{g.At[k-1].Seconds(), g.At[k].Seconds()})
		}
	}
	return m
}

// usageCharts draws the first repeat's CPU use per instance at 10 ms, 100 ms
// and 1 s, with the limit and the throttled periods. At most maxInstances
// instances per entry are drawn.
func usageCharts(es []*entry, load, id string, maxInstances int) (charts []*Chart, notes []string) {
	for ei, e := range es {
		if e.load.Name != load || len(e.runs) == 0 {
			continue
		}
		run := e.runs[0]
		limit := 0.0
		if q, p := run.Settings.QuotaUsec, run.Settings.PeriodUsec; q > 0 && p > 0 {
			limit = float64(q) / float64(p)
		}
		shown := 0
		for _, g := range run.Groups {
			name := InstanceName(g.Name)
			if !slices.Contains(run.Instances, name) {
				continue
			}
			if shown == maxInstances {
				notes = append(notes, fmt.Sprintf("%s: %d of %d instances drawn", e.label, maxInstances, len(run.Instances)))
				break
			}
			shown++
			c := &Chart{ID: fmt.Sprintf("%s-cpu-%d-%d", id, ei, shown), Title: fmt.Sprintf("CPU use of %s (%s, run %s)", name, e.label, run.ID),
				X: Axis{Label: "time since the load started (s)"}, Y: Axis{Label: "CPU use (cores)"}, Height: 240, MarkLabel: "throttled"}
			c.Series = []Series{
				{Name: "10 ms", Points: Downsample(stairs(g, 10*time.Millisecond), 700), Color: "#7fb2d8", Width: 0.8},
				{Name: "100 ms", Points: stairs(g, 100*time.Millisecond), Color: e.color, Width: 1.8},
				{Name: "1 s", Points: stairs(g, time.Second), Color: "#222", Width: 3, Dash: "8 3"},
			}
			if limit > 0 {
				c.HLines = []HLine{{Y: limit, Label: fmt.Sprintf("limit %s cores", fmtNum(limit))}}
			}
			// The highest use within one of the group's own periods: at most
			// the limit (plus burst), unlike the 100 ms windows that straddle
			// two periods. One label when it sits on the limit line.
			if pk := run.Usage[name].PeakPeriod; pk > 0 {
				label := fmt.Sprintf("peak within a period %s", fmtNum(pk))
				if len(c.HLines) > 0 && math.Abs(pk-limit) < 0.04*limit {
					c.HLines[0].Label += ", " + label
				} else {
					c.HLines = append(c.HLines, HLine{Y: pk, Label: label})
				}
			}
			c.Marks = throttleMarks(g)
			charts = append(charts, c)
		}
	}
	return charts, notes
}

// instanceBars lists requests per instance over all repeats of an entry.
type instanceBar struct {
	Name  string
	Count int64
	Pct   float64
}

func instanceBars(e *entry) []instanceBar {
	counts := map[string]int64{}
	var total int64
	for _, r := range e.runs {
		for name, n := range r.Summary.PerInstance {
			counts[name] += n
			total += n
		}
	}
	var out []instanceBar
	for name, n := range counts {
		out = append(out, instanceBar{Name: name, Count: n, Pct: 100 * float64(n) / float64(max(total, 1))})
	}
	slices.SortFunc(out, func(a, b instanceBar) int { return strings.Compare(a.Name, b.Name) })
	return out
}
