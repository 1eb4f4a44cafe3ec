package report

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// Point is one point of a series, in data units.
type Point struct{ X, Y float64 }

// Series is one line of a chart.
type Series struct {
	Name   string
	Points []Point
	// Color is a CSS colour; Width the stroke width in pixels; Dash an SVG
	// dash array ("" for solid), so lines differ without colour too.
	Color string
	Width float64
	Dash  string
	// Step draws a staircase (each value holds until the next point).
	Step bool
	// Opacity below 1 lets the lines behind show through.
	Opacity float64
	// NoLegend leaves the series out of the legend (repeats after the first).
	NoLegend bool
	// Lower and Upper, when set, bound a shaded band drawn behind the line
	// (a 95% interval at each point).
	Lower, Upper []Point
}

// Mark is a short tick on the x axis, drawn under the plot (a throttled period).
type Mark struct {
	X0, X1 float64
}

// Axis describes one axis.
type Axis struct {
	Label    string
	Log      bool
	Min, Max float64 // 0, 0: from the data
	// Nines draws a percentile axis: X is a percentile 0..100, spaced by
	// -log10(1-p) so the tail gets the room (HdrHistogram's plots).
	Nines bool
}

// Chart is a line chart rendered to SVG.
type Chart struct {
	ID     string
	Title  string
	X, Y   Axis
	Series []Series
	// HLines are horizontal reference lines (a CPU limit), with a label.
	HLines []HLine
	Marks  []Mark
	// MarkLabel explains the marks in the legend.
	MarkLabel     string
	Width, Height int
}

// HLine is a horizontal reference line.
type HLine struct {
	Y     float64
	Label string
}

const (
	padLeft, padRight, padTop0, padBottom = 64, 16, 46, 44
)

// ninesX maps a percentile (0..100) to the nines scale.
func ninesX(p float64) float64 {
	q := 1 - p/100
	if q < 1e-6 {
		q = 1e-6
	}
	return -math.Log10(q)
}

type scale struct {
	min, max float64
	log      bool
	nines    bool
	a, b     float64 // pixel range
}

// attr is the scale as report.js reads it: min,max,a,b,log,nines.
func (s scale) attr() string {
	b := func(v bool) string {
		if v {
			return "1"
		}
		return "0"
	}
	return fmt.Sprintf("%g,%g,%g,%g,%s,%s", s.min, s.max, s.a, s.b, b(s.log), b(s.nines))
}

func (s scale) f(v float64) float64 {
	if s.nines {
		v = ninesX(v)
	}
	if s.log {
		v = math.Log10(math.Max(v, 1e-12))
	}
	if s.max == s.min {
		return (s.a + s.b) / 2
	}
	return s.a + (v-s.min)/(s.max-s.min)*(s.b-s.a)
}

func newScale(ax Axis, vals []float64, a, b float64) scale {
	s := scale{log: ax.Log, nines: ax.Nines, a: a, b: b}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) || (ax.Log && v <= 0) {
			continue
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if ax.Min != 0 || ax.Max != 0 {
		lo, hi = ax.Min, ax.Max
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0, 1
		if ax.Log {
			lo, hi = 1, 10
		}
	}
	if ax.Nines {
		s.min, s.max = 0, math.Max(ninesX(hi), 1)
		return s
	}
	if ax.Log {
		s.min, s.max = math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		if s.max == s.min {
			s.max++
		}
		return s
	}
	if lo > 0 && ax.Min == 0 && ax.Max == 0 {
		lo = 0
	}
	if hi == lo {
		hi = lo + 1
	}
	if ax.Max == 0 {
		step := niceStep((hi - lo) / 5)
		hi = math.Ceil(hi/step) * step
	}
	s.min, s.max = lo, hi
	return s
}

func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

type tick struct {
	v     float64 // in data units
	label string
}

func (s scale) ticks() []tick {
	var t []tick
	switch {
	case s.nines:
		for _, p := range []float64{0, 50, 90, 99, 99.9, 99.99, 99.999, 99.9999} {
			if ninesX(p) <= s.max+1e-9 {
				t = append(t, tick{p, fmtNum(p) + "%"})
			}
		}
	case s.log:
		for e := s.min; e <= s.max; e++ {
			t = append(t, tick{math.Pow(10, e), fmtNum(math.Pow(10, e))})
		}
	default:
		step := niceStep((s.max - s.min) / 5)
		for v := math.Ceil(s.min/step) * step; v <= s.max+step/1e6; v += step {
			t = append(t, tick{v, fmtNum(v)})
		}
	}
	return t
}

// fmtNum formats a tick value shortly and deterministically.
func fmtNum(v float64) string {
	if v == 0 {
		return "0"
	}
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	case a >= 0.01:
		return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
	default:
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
}

func px(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

// SVG renders the chart. The output depends only on the chart's data.
func (c *Chart) SVG() string {
	w, h := c.Width, c.Height
	if w == 0 {
		w = 600
	}
	if h == 0 {
		h = 320
	}
	var xs, ys []float64
	for _, s := range c.Series {
		for _, p := range s.Points {
			xs, ys = append(xs, p.X), append(ys, p.Y)
		}
	}
	for _, l := range c.HLines {
		ys = append(ys, l.Y)
	}
	sx := newScale(c.X, xs, padLeft, float64(w-padRight))
	// The legend sits in rows under the title; the plot starts below them.
	legend, lx, ly := c.legendLayout(w)
	padTop := padTop0 + ly - legendTop
	sy := newScale(c.Y, ys, float64(h-padBottom), float64(padTop))
	var b strings.Builder
	// The scales ride along as data attributes, so the hover read-out
	// (report.js) turns a pointer position back into values.
	fmt.Fprintf(&b, `<svg class="chart" id="%s" viewBox="0 0 %d %d" role="img" aria-labelledby="%s-t" data-sx="%s" data-sy="%s" xmlns="http://www.w3.org/2000/svg">`, c.ID, w, h, c.ID, sx.attr(), sy.attr())
	fmt.Fprintf(&b, `<title id="%s-t">%s</title>`, c.ID, html.EscapeString(c.Title))
	fmt.Fprintf(&b, `<text class="ctitle" x="%d" y="16">%s</text>`, padLeft, html.EscapeString(c.Title))
	// Grid and ticks.
	b.WriteString(`<g class="grid">`)
	for _, t := range sx.ticks() {
		x := sx.f(t.v)
		fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%d" y2="%d"/>`, px(x), px(x), padTop, h-padBottom)
		fmt.Fprintf(&b, `<text class="tx" x="%s" y="%d">%s</text>`, px(x), h-padBottom+17, t.label)
	}
	for _, t := range sy.ticks() {
		y := sy.f(t.v)
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%s" y2="%s"/>`, padLeft, w-padRight, px(y), px(y))
		fmt.Fprintf(&b, `<text class="ty" x="%d" y="%s">%s</text>`, padLeft-4, px(y+3), t.label)
	}
	b.WriteString(`</g>`)
	fmt.Fprintf(&b, `<text class="xl" x="%d" y="%d">%s</text>`, (padLeft+w-padRight)/2, h-4, html.EscapeString(c.X.Label))
	fmt.Fprintf(&b, `<text class="yl" transform="translate(14 %d) rotate(-90)">%s</text>`, (padTop+h-padBottom)/2, html.EscapeString(c.Y.Label))
	// Clip lines to the plot area.
	fmt.Fprintf(&b, `<clipPath id="%s-c"><rect x="%d" y="%d" width="%d" height="%d"/></clipPath>`, c.ID, padLeft, padTop-2, w-padLeft-padRight, h-padTop-padBottom+4)
	fmt.Fprintf(&b, `<g clip-path="url(#%s-c)">`, c.ID)
	for _, l := range c.HLines {
		y := sy.f(l.Y)
		fmt.Fprintf(&b, `<line class="hline" x1="%d" x2="%d" y1="%s" y2="%s"/>`, padLeft, w-padRight, px(y), px(y))
		fmt.Fprintf(&b, `<text class="hl" x="%d" y="%s">%s</text>`, w-padRight-4, px(y-4), html.EscapeString(l.Label))
	}
	// Bands first, so every line lies over them.
	for i, s := range c.Series {
		if len(s.Lower) == 0 || len(s.Lower) != len(s.Upper) {
			continue
		}
		var d strings.Builder
		add := func(p Point) {
			if c.Y.Log && p.Y <= 0 || c.X.Log && p.X <= 0 {
				return
			}
			if d.Len() == 0 {
				d.WriteString("M")
			} else {
				d.WriteString("L")
			}
			d.WriteString(px(sx.f(p.X)) + " " + px(sy.f(p.Y)))
		}
		for _, p := range s.Upper {
			add(p)
		}
		for k := len(s.Lower) - 1; k >= 0; k-- {
			add(s.Lower[k])
		}
		if d.Len() > 0 {
			fmt.Fprintf(&b, `<path class="band" data-series="%d" data-name="%s" d="%sZ" fill="%s" fill-opacity="0.18" stroke="none"/>`,
				i, html.EscapeString(s.Name), d.String(), s.Color)
		}
	}
	for i, s := range c.Series {
		if len(s.Points) == 0 {
			continue
		}
		var d strings.Builder
		for _, p := range s.Points {
			if c.Y.Log && p.Y <= 0 || c.X.Log && p.X <= 0 {
				continue
			}
			x, y := sx.f(p.X), sy.f(p.Y)
			switch {
			case d.Len() == 0:
				d.WriteString("M" + px(x) + " " + px(y))
			case s.Step:
				d.WriteString("H" + px(x) + "V" + px(y))
			default:
				d.WriteString("L" + px(x) + " " + px(y))
			}
		}
		width, dash := stroke(s)
		op := ""
		if s.Opacity > 0 && s.Opacity < 1 {
			op = ` stroke-opacity="` + strconv.FormatFloat(s.Opacity, 'f', 2, 64) + `"`
		}
		fmt.Fprintf(&b, `<path class="series" data-series="%d" data-name="%s" d="%s" stroke="%s" stroke-width="%s"%s%s fill="none"><title>%s</title></path>`,
			i, html.EscapeString(s.Name), d.String(), s.Color, px(width), op, dash, html.EscapeString(s.Name))
	}
	b.WriteString(`</g>`)
	// Marks go in a strip just under the plot, where no line hides them.
	for _, m := range c.Marks {
		x0, x1 := sx.f(m.X0), sx.f(m.X1)
		fmt.Fprintf(&b, `<rect class="mark" x="%s" y="%d" width="%s" height="5"/>`, px(x0), h-padBottom+1, px(math.Max(x1-x0, 2)))
	}
	// Legend: rows under the title, each line sample with the same width and
	// dash as its line, so it reads without colour.
	for _, it := range legend {
		s := c.Series[it.series]
		width, dash := stroke(s)
		fmt.Fprintf(&b, `<g class="legend" data-series="%d"><line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="%s"%s/><text x="%d" y="%d">%s</text></g>`,
			it.series, it.x, it.x+24, it.y-4, it.y-4, s.Color, px(math.Min(width, 6)), dash, it.x+30, it.y, html.EscapeString(s.Name))
	}
	if c.MarkLabel != "" && len(c.Marks) > 0 {
		fmt.Fprintf(&b, `<g class="legend"><rect class="mark" x="%d" y="%d" width="24" height="6"/><text x="%d" y="%d">%s</text></g>`, lx, ly-7, lx+30, ly, html.EscapeString(c.MarkLabel))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// stroke returns a series' line width (1.5 by default) and its dash attribute.
func stroke(s Series) (float64, string) {
	width, dash := s.Width, ""
	if width == 0 {
		width = 1.5
	}
	if s.Dash != "" {
		dash = ` stroke-dasharray="` + s.Dash + `"`
	}
	return width, dash
}

type legendItem struct{ series, x, y int }

// legendTop is the baseline of the legend's first row.
const legendTop = 34

// legendLayout places the named series in rows under the title, wrapping
// when a row is full; it returns where the next item would go.
func (c *Chart) legendLayout(w int) (items []legendItem, x, y int) {
	x, y = padLeft, legendTop
	for i, s := range c.Series {
		if s.NoLegend || s.Name == "" {
			continue
		}
		size := 32 + int(6.2*float64(len([]rune(s.Name)))) + 14
		if x+size > w-padRight && x > padLeft {
			x, y = padLeft, y+13
		}
		items = append(items, legendItem{i, x, y})
		x += size
	}
	return items, x, y
}

// Downsample keeps at most 2*buckets points of a series sorted by X: the
// minimum and the maximum of each bucket, in order, so peaks survive.
func Downsample(p []Point, buckets int) []Point {
	if len(p) <= 2*buckets || buckets < 1 {
		return p
	}
	out := make([]Point, 0, 2*buckets)
	per := float64(len(p)) / float64(buckets)
	for b := 0; b < buckets; b++ {
		lo, hi := int(float64(b)*per), int(float64(b+1)*per)
		if hi > len(p) {
			hi = len(p)
		}
		if lo >= hi {
			continue
		}
		mi, ma := lo, lo
		for i := lo; i < hi; i++ {
			if p[i].Y < p[mi].Y {
				mi = i
			}
			if p[i].Y > p[ma].Y {
				ma = i
			}
		}
		if mi > ma {
			mi, ma = ma, mi
		}
		out = append(out, p[mi])
		if ma != mi {
			out = append(out, p[ma])
		}
	}
	return out
}
