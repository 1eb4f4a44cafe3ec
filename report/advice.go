package report

import (
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/units"
)

// The advise section: for the first run of each config, the first
// instance's 10 ms CPU use replayed through the quota model (advise), drawn
// as the use with the advised limit and the throttled share against the
// limit, with and without burst. The same charts make advise --html.

// AdviceCharts returns the two charts of an advice: CPU use at 10 ms with the
// advised limit (and the group's own, if it had one) drawn, and the
// predicted throttled share of periods against the limit, without burst and
// with a burst equal to the limit, at the recommendation's period.
func AdviceCharts(d *advise.Demand, a *advise.Advice, id string) []*Chart {
	use := &Chart{ID: id + "-use", Title: "CPU use every 10 ms, and the advised limit",
		X: Axis{Label: "time (s)"}, Y: Axis{Label: "CPU use (cores)", Min: 0}, Height: 240}
	use.Series = []Series{
		{Name: "10 ms", Points: Downsample(steps(d, 0), 700), Color: "#7fb2d8", Width: 0.8},
		{Name: "1 s", Points: steps(d, time.Second), Color: "#222", Width: 2, Dash: "8 3"},
	}
	r := a.Recommendation
	if r.LimitMilli > 0 {
		label := "advised limit " + units.FormatMilliCPU(r.LimitMilli)
		if !r.Met {
			label = "largest limit evaluated (none meets the target) " + units.FormatMilliCPU(r.LimitMilli)
		}
		use.HLines = append(use.HLines, HLine{Y: float64(r.LimitMilli) / 1000, Label: label})
	}
	if wb := r.WithBurst; wb != nil {
		use.HLines = append(use.HLines, HLine{Y: float64(wb.LimitMilli) / 1000,
			Label: fmt.Sprintf("limit %s with %s burst", units.FormatMilliCPU(wb.LimitMilli), units.FormatMilliCPU(wb.BurstMilli))})
	}
	if own := a.Sampled.LimitMilli; own > 0 {
		use.HLines = append(use.HLines, HLine{Y: float64(own) / 1000, Label: "its own limit " + units.FormatMilliCPU(own)})
	}

	curve := &Chart{ID: id + "-curve", Title: "Predicted throttled share against the limit (shaded: interval)",
		X: kneeAxis(a), Y: Axis{Label: "throttled periods (%)", Min: 0, Max: 100}, Height: 240}
	for _, c := range []struct {
		burst       bool
		name, color string
		dash        string
	}{{false, "no burst", "#c33", ""}, {true, "burst = limit", "#393", "6 3"}} {
		s := Series{Name: c.name, Color: c.color, Width: 2, Dash: c.dash}
		for _, e := range a.Evaluations {
			if (e.BurstMilli > 0) == c.burst && e.PeriodUsec == r.PeriodUsec {
				x, y := float64(e.LimitMilli)/1000, 100*e.ThrottledRatio
				s.Points = append(s.Points, Point{X: x, Y: y})
				// The interval (the blocks' spread, the level replayed
				// lower and higher), shaded behind the line.
				lo, hi := y, y
				if rg := e.ThrottledRatioRange; rg != nil {
					lo, hi = 100*rg[0], 100*rg[1]
				}
				s.Lower, s.Upper = append(s.Lower, Point{X: x, Y: lo}), append(s.Upper, Point{X: x, Y: hi})
			}
		}
		curve.Series = append(curve.Series, s)
	}
	if t := r.Target.MaxThrottled; t < 1 {
		curve.HLines = []HLine{{Y: 100 * t, Label: fmt.Sprintf("target %s%%", strconv.FormatFloat(100*t, 'g', 3, 64))}}
	}
	return []*Chart{use, curve}
}

// kneeAxis is the limit axis of the throttled-share curve: from the lowest
// limit evaluated to twice the recommended one (or past the knee's highest
// end), where the curve moves; limits up to every CPU the group used would
// squeeze the knee into a sliver at the left.
func kneeAxis(a *advise.Advice) Axis {
	ax := Axis{Label: "limit (cores)"}
	lo, top := math.Inf(1), 0.0
	for _, e := range a.Evaluations {
		lo, top = min(lo, float64(e.LimitMilli)/1000), max(top, float64(e.LimitMilli)/1000)
	}
	r := a.Recommendation
	if math.IsInf(lo, 1) || !r.Met || r.LimitMilli <= 0 {
		return ax
	}
	hi := 2 * float64(r.LimitMilli) / 1000
	for _, k := range a.Knee {
		hi = max(hi, 1.2*float64(k.HighMilli)/1000)
	}
	const step = 0.05
	ax.Min, ax.Max = math.Floor(lo/step)*step, math.Min(math.Ceil(hi/step)*step, top)
	if ax.Max <= ax.Min {
		return Axis{Label: ax.Label}
	}
	return ax
}

// AdviceSection is the report's advise section (a Section) over every source: one
// advice per config (its first run's first instance). A run that was
// throttled hid its demand above its limit: its advice is a lower bound and
// says so. Runs too short for a period are listed with the reason.
func AdviceSection(sources []*Source) template.HTML {
	// Each config's advice is worked out at once, as many at a time as
	// there are CPUs (a simulated preset's report waits for them after
	// its runs), and written in order: the section does not depend on
	// the order they finish in.
	type item struct {
		si    int
		label string
		d     *advise.Demand
		a     *advise.Advice
		err   error
	}
	var items []*item
	var todo []func()
	for si, s := range sources {
		seen := map[string]bool{}
		for _, r := range s.Runs {
			if seen[r.Config] || len(r.Instances) == 0 {
				continue
			}
			seen[r.Config] = true
			var g *GroupUsage
			for i := range r.Groups {
				if InstanceName(r.Groups[i].Name) == r.Instances[0] {
					g = &r.Groups[i]
					break
				}
			}
			if g == nil || len(g.At) < 2 {
				continue
			}
			it := &item{si: si, label: fmt.Sprintf("%s, config %s: instance %s in run %s", s.Label, r.Config, r.Instances[0], r.ID)}
			items = append(items, it)
			todo = append(todo, func() {
				rec := r.Run.Demand(r.Instances[0], g.At, g.Usage, g.Throttled)
				it.d = rec.Demand
				sampled := advise.Sampled{Source: it.label, CPUStat: rec.CPUStat, LimitMilli: rec.LimitMilli, PeriodUsec: rec.PeriodUsec}
				it.a, it.err = advise.Advise(it.d, advise.Request{}, sampled)
			})
		}
	}
	runAll(todo)
	var b strings.Builder
	n := 0
	for _, it := range items {
		fmt.Fprintf(&b, "<h3>%s</h3>\n", html.EscapeString(it.label))
		if it.err != nil {
			fmt.Fprintf(&b, "<p class=\"note\">No advice: %s.</p>\n", html.EscapeString(it.err.Error()))
			continue
		}
		a := it.a
		b.WriteString(adviceSummary(a))
		for _, w := range a.Warnings {
			fmt.Fprintf(&b, "<p class=\"note\">Warning: %s.</p>\n", html.EscapeString(w))
		}
		b.WriteString(`<div class="grid2">`)
		for _, c := range AdviceCharts(it.d, a, fmt.Sprintf("adv%d-%d", it.si, n)) {
			fmt.Fprintf(&b, "<figure>%s</figure>", c.SVG())
		}
		b.WriteString("</div>\n")
		n++
	}
	if b.Len() == 0 {
		return ""
	}
	return template.HTML(`<section class="load" id="advise">
<h2>Advice</h2>
<p class="note">throttlelab advise on each config's first run: the instance's 10 ms CPU use replayed through the quota model for a grid of limits (means over 10 phases of the period), and the smallest limit that keeps throttled periods at or under ` + fmt.Sprintf("%g%%", advise.DefaultMaxThrottled*100) + ` in every block of the run (up to ` + strconv.Itoa(advise.MaxBlocks) + ` blocks of at least ` + advise.MinBlock.String() + `; the intervals are the spread over the blocks and over at least ` + fmt.Sprintf("%.0f%%", advise.LevelSpread*100) + ` less or more use). A run its limit throttled has its demand rebuilt from its throttling counters, as advise does. The same as <code>throttlelab advise</code> on the results directory, for each config and instance.</p>
` + b.String() + "</section>\n")
}

// adviceSummary is the answer (Answer) and, when the window is not
// stationary or the samples were doubtful, why (the warnings, widened
// intervals among them, are listed by the caller).
func adviceSummary(a *advise.Advice) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<p><strong>%s</strong>", html.EscapeString(advise.Answer(a)))
	if r := a.Recommendation; r.WithBurst != nil {
		fmt.Fprintf(&b, " With a burst of %s, limit %s (%s).", units.FormatMilliCPU(r.WithBurst.BurstMilli), units.FormatMilliCPU(r.WithBurst.LimitMilli), advise.ShareRange(r.WithBurst.ThrottledRatio, r.WithBurst.ThrottledRatioRange))
	}
	if k := strings.TrimSpace(advise.KneeText(a)); k != "" {
		fmt.Fprintf(&b, " %s.", html.EscapeString(strings.ToUpper(k[:1])+strings.TrimSuffix(k[1:], ".")))
	}
	if !a.Window.Stationary {
		fmt.Fprintf(&b, " Not stationary: %s.", html.EscapeString(a.Window.Nonstationary))
	}
	st := a.Sampled.CPUStat
	switch r := a.Recommendation; {
	case r.LowerBound:
		fmt.Fprintf(&b, " <strong>A lower bound</strong>: the run was throttled in %d of %d periods, so its demand above its limit was never seen.", st.ThrottledPeriods, st.Periods)
	case r.Reconstructed:
		fmt.Fprintf(&b, " The run was throttled in %d of %d periods: its limit spread its bursts, so its demand was rebuilt from the throttling counters as the most bursty they allow (the advice errs high, not low).", st.ThrottledPeriods, st.Periods)
	}
	b.WriteString("</p>\n")
	return b.String()
}

// WriteAdviceHTML writes one advice as a self-contained HTML page (advise
// --html): the report's charts and styles, then the terminal table.
func WriteAdviceHTML(w io.Writer, d *advise.Demand, a *advise.Advice) error {
	var text strings.Builder
	if err := advise.WriteTextGrid(&text, a); err != nil {
		return err
	}
	css, js := Assets()
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>throttlelab advise</title>\n<style>%s</style>\n</head>\n<body>\n<header><h1>throttlelab advise</h1><p class=\"lede\">%s</p></header>\n<main><section class=\"load\">\n",
		css, html.EscapeString(a.Sampled.Source))
	b.WriteString(adviceSummary(a))
	b.WriteString(`<div class="grid2">`)
	for _, c := range AdviceCharts(d, a, "adv") {
		fmt.Fprintf(&b, "<figure>%s</figure>", c.SVG())
	}
	fmt.Fprintf(&b, "</div>\n<h3>Table</h3>\n<pre>%s</pre>\n</section></main>\n<script>%s</script>\n</body>\n</html>\n", html.EscapeString(text.String()), js)
	_, err := io.WriteString(w, b.String())
	return err
}

// steps returns the use (cores) over consecutive windows of at least w (0:
// every sample interval), two points per window so the line is flat over it.
func steps(d *advise.Demand, w time.Duration) []Point {
	var pts []Point
	j := 0
	for k := 1; k < len(d.At); k++ {
		if d.At[k]-d.At[j] < w*95/100 && k != len(d.At)-1 {
			continue
		}
		cores := float64(d.Usage[k]-d.Usage[j]) / float64(d.At[k]-d.At[j])
		pts = append(pts, Point{X: d.At[j].Seconds(), Y: cores}, Point{X: d.At[k].Seconds(), Y: cores})
		j = k
	}
	return pts
}

// runAll calls every f in fs, up to GOMAXPROCS at a time, and returns when
// all have returned.
func runAll(fs []func()) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, f := range fs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f()
		})
	}
	wg.Wait()
}
