package limitmap

import (
	_ "embed"
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/throttlelab/throttlelab/units"
)

//go:embed map.html.tmpl
var pageTemplate string

var page = template.Must(template.New("map").Parse(pageTemplate))

// Levels are the p99 ratios the maps draw as contours.
var Levels = []float64{1.5, 2, 5}

// overloadedValue stands for an overloaded cell in the contours: far above
// every level, so the lines close off the overloaded region.
const overloadedValue = 1e6

type pageData struct {
	M        *Map
	Title    string
	Maps     []template.HTML
	Measured []measuredRow
}

type measuredRow struct {
	Where                     string
	MeasRatio, SimRatio, Gap  string
	MeasThrottled, SimThrottl string
	MeasP99, SimP99, Dir      string
	Off, Busy                 bool
}

// WriteHTML writes the map as one self-contained page (no scripts, styles
// or pictures from elsewhere): heat maps of the p99 ratio and of the
// throttled share of periods, with the contours at Levels, the overloaded
// cells hatched, the line where mean use equals the limit, and the
// measured points marked with their measured ratio; hovering a cell reads
// it out.
func WriteHTML(w io.Writer, m *Map) error {
	d := pageData{M: m, Title: fmt.Sprintf("Where limits hurt: %s", m.Experiment)}
	hi := 2.0
	for _, c := range m.Cells {
		if c.P99Ratio != nil {
			hi = max(hi, *c.P99Ratio)
		}
	}
	hi = math.Min(hi, 100)
	d.Maps = append(d.Maps,
		template.HTML(heatmap(m, "p99", "p99 against the unlimited reference", func(c *Cell) (float64, bool) {
			if c.P99Ratio == nil {
				return 0, false
			}
			return (math.Log(math.Max(*c.P99Ratio, 1))) / math.Log(hi), true
		}, colourBar("p99", "p99 / unlimited p99 (log)", 1, hi, true))),
		template.HTML(heatmap(m, "thr", "throttled share of periods (nr_throttled / nr_periods)", func(c *Cell) (float64, bool) {
			return c.ThrottledPeriodsRatio, c.Note == ""
		}, colourBar("thr", "throttled periods %", 0, 100, false))))
	for _, p := range m.Measured {
		d.Measured = append(d.Measured, measuredRow{
			Where:     units.FormatMilliCPU(p.LimitMilli) + " at " + loadOf(m.Axis, p),
			MeasRatio: "x" + fmtRatio(p.Measured.P99Ratio), SimRatio: "x" + fmtRatio(p.Simulated.P99Ratio),
			Gap:           "x" + strconv.FormatFloat(Agreement(p), 'f', 2, 64),
			Off:           Agreement(p) > 1.5,
			MeasThrottled: pct(p.Measured.ThrottledPeriodsRatio), SimThrottl: pct(p.Simulated.ThrottledPeriodsRatio),
			MeasP99: fmt.Sprintf("%.1f / %.1f ms", p.Measured.P99Ms, p.Measured.ReferenceP99Ms),
			SimP99:  fmt.Sprintf("%.1f / %.1f ms", p.Simulated.P99Ms, p.Simulated.ReferenceP99Ms),
			Dir:     p.Dir,
			Busy:    Busy(p) > 0,
		})
	}
	return page.Execute(w, d)
}

func pct(v float64) string { return strconv.FormatFloat(100*v, 'f', 0, 64) + "%" }

// The plot's geometry in pixels.
const (
	plotW, plotH               = 600, 420
	padL, padR, padT, padB     = 70, 24, 16, 52
	svgW, svgH                 = padL + plotW + padR, padT + plotH + padB
	hatchColour, missingColour = "#bbb", "#eee"
)

// heatmap draws one map as SVG; value gives a cell's colour position
// (0..1), false for a cell without one.
func heatmap(m *Map, id, title string, value func(c *Cell) (float64, bool), bar string) string {
	nc, nr := len(m.Limits), len(m.Loads)
	cw, ch := float64(plotW)/float64(nc), float64(plotH)/float64(nr)
	// Grid units (column, row at cell centres) to pixels; row 0 at the bottom.
	gx := func(c float64) float64 { return padL + (c+0.5)*cw }
	gy := func(r float64) float64 { return padT + plotH - (r+0.5)*ch }
	var b strings.Builder
	fmt.Fprintf(&b, `<figure class="map"><figcaption>%s</figcaption>`, html.EscapeString(title))
	fmt.Fprintf(&b, `<svg class="heatmap" id="map-%s" viewBox="0 0 %d %d" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`, id, svgW, svgH, html.EscapeString(title))
	fmt.Fprintf(&b, `<defs><pattern id="hatch-%s" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="8" height="8" fill="#f4f4f4"/><line x1="0" y1="0" x2="0" y2="8" stroke="%s" stroke-width="3"/></pattern>`, id, hatchColour)
	fmt.Fprintf(&b, `<clipPath id="clip-%s"><rect x="%d" y="%d" width="%d" height="%d"/></clipPath></defs>`, id, padL, padT, plotW, plotH)
	for r := range nr {
		for c := range nc {
			cell := m.Cell(r, c)
			fill := missingColour
			if cell.Overloaded {
				fill = "url(#hatch-" + id + ")"
			} else if t, ok := value(cell); ok {
				fill = hex(colormap(t))
			}
			fmt.Fprintf(&b, `<rect class="cell" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`,
				px(padL+float64(c)*cw), px(padT+plotH-float64(r+1)*ch), px(cw+0.3), px(ch+0.3), fill, html.EscapeString(readout(m, cell, r)))
		}
	}
	// Contours of the p99 ratio, on both maps.
	grid := make([][]float64, nr)
	for r := range nr {
		grid[r] = make([]float64, nc)
		for c := range nc {
			cell := m.Cell(r, c)
			switch {
			case cell.Overloaded:
				grid[r][c] = overloadedValue
			case cell.P99Ratio != nil:
				grid[r][c] = *cell.P99Ratio
			default:
				grid[r][c] = math.NaN()
			}
		}
	}
	fmt.Fprintf(&b, `<g clip-path="url(#clip-%s)">`, id)
	for i, level := range Levels {
		segs := contour(grid, level)
		if len(segs) == 0 {
			continue
		}
		var p strings.Builder
		for _, s := range segs {
			fmt.Fprintf(&p, "M%s %sL%s %s", px(gx(s.x0)), px(gy(s.y0)), px(gx(s.x1)), px(gy(s.y1)))
		}
		fmt.Fprintf(&b, `<path class="contour" data-level="%g" d="%s" fill="none" stroke="#fff" stroke-width="%g" stroke-dasharray="%s"/>`,
			level, p.String(), 1.5+float64(i)*0.75, []string{"4 3", "", "1 2"}[i%3])
		// Label the line at its rightmost point.
		best := segs[0]
		for _, s := range segs {
			if s.x1 > best.x1 {
				best = s
			}
		}
		fmt.Fprintf(&b, `<text class="clabel" x="%s" y="%s">%gx</text>`, px(gx(best.x1)+3), px(gy(best.y1)-3), level)
	}
	// Where mean use equals the limit: the limit per instance that the
	// offered work fills, at each load.
	var line strings.Builder
	for r := range nr {
		ref := m.References[min(r, len(m.References)-1)]
		milli := 1000 * ref.OfferedCores / float64(max(m.Instances, 1))
		x := colOf(m.Limits, milli)
		cmd := "L"
		if r == 0 {
			cmd = "M"
		}
		if nr == 1 {
			fmt.Fprintf(&line, "M%s %dL%s %d", px(gx(x)), padT, px(gx(x)), padT+plotH)
			break
		}
		fmt.Fprintf(&line, "%s%s %s", cmd, px(gx(x)), px(gy(float64(r))))
	}
	fmt.Fprintf(&b, `<path class="useline" d="%s" fill="none" stroke="#d62728" stroke-width="2.5"/>`, line.String())
	b.WriteString(`</g>`)
	// Measured points.
	for _, p := range m.Measured {
		r, c := indexOf(m, p)
		if r < 0 {
			continue
		}
		x, y := gx(float64(c)), gy(float64(r))
		fmt.Fprintf(&b, `<g class="measured"><circle cx="%s" cy="%s" r="7" fill="#fff" stroke="#000" stroke-width="2"/><text x="%s" y="%s" class="mlabel">%s</text><title>measured: p99 x%s, throttled %s; simulated: p99 x%s, throttled %s</title></g>`,
			px(x), px(y), px(x+10), px(y+4), html.EscapeString(measuredLabel(id, p)),
			fmtRatio(p.Measured.P99Ratio), pct(p.Measured.ThrottledPeriodsRatio), fmtRatio(p.Simulated.P99Ratio), pct(p.Simulated.ThrottledPeriodsRatio))
	}
	// Axes.
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`, padL, padT, plotW, plotH)
	every := max(1, (nc+9)/10)
	for c, l := range m.Limits {
		if c%every == 0 || c == nc-1 {
			fmt.Fprintf(&b, `<text class="tick" x="%s" y="%d" text-anchor="middle">%s</text>`, px(gx(float64(c))), padT+plotH+16, units.FormatMilliCPU(l))
		}
	}
	every = max(1, (nr+11)/12)
	for r, v := range m.Loads {
		if r%every == 0 || r == nr-1 {
			fmt.Fprintf(&b, `<text class="tick" x="%d" y="%s" text-anchor="end">%s</text>`, padL-6, px(gy(float64(r))+4), fmtLoad(v))
		}
	}
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d" text-anchor="middle">CPU limit per instance (%d instances of %s)</text>`, padL+plotW/2, svgH-12, m.Instances, html.EscapeString(m.Limited))
	fmt.Fprintf(&b, `<text class="axis" transform="translate(16 %d) rotate(-90)" text-anchor="middle">%s</text>`, padT+plotH/2, html.EscapeString(axisLong(m.Axis)))
	b.WriteString(`</svg>`)
	b.WriteString(bar)
	b.WriteString(`</figure>`)
	return b.String()
}

// measuredLabel is a marker's label: the measured figure of that map.
func measuredLabel(id string, p Measured) string {
	if id == "thr" {
		return pct(p.Measured.ThrottledPeriodsRatio)
	}
	return "x" + fmtRatio(p.Measured.P99Ratio)
}

func axisLong(a Axis) string {
	switch a {
	case AxisRate:
		return "offered load (requests per second)"
	case AxisWorkers:
		return "closed-loop workers"
	}
	return "burst allowance (ms)"
}

// readout is what hovering a cell shows.
func readout(m *Map, c *Cell, r int) string {
	s := fmt.Sprintf("limit %s at %s %s: ", units.FormatMilliCPU(c.LimitMilli), fmtLoad(m.Loads[r]), axisTitle(m.Axis))
	switch {
	case c.Note != "":
		return s + c.Note
	case c.Overloaded:
		s += "overloaded (the limits add up to less than the offered work)"
	case c.P99Ratio != nil:
		s += fmt.Sprintf("p99 x%s (%.1f ms)", fmtRatio(*c.P99Ratio), c.P99Ms)
	}
	return s + fmt.Sprintf("; throttled %s of periods; mean use %.2f cores", pct(c.ThrottledPeriodsRatio), c.MeanCores)
}

// colOf places a limit (millicores) on the column axis, between the
// columns of the limits around it (the limits are evenly spaced, so this is
// linear), and beyond the ends at the same spacing.
func colOf(limits []int64, milli float64) float64 {
	if len(limits) < 2 {
		return 0
	}
	lo, hi := float64(limits[0]), float64(limits[len(limits)-1])
	return (milli - lo) / (hi - lo) * float64(len(limits)-1)
}

// indexOf finds a measured point's cell: its row and column, -1 if none.
func indexOf(m *Map, p Measured) (int, int) {
	for k, c := range m.Cells {
		if c.LimitMilli != p.LimitMilli {
			continue
		}
		same := func(a, b *float64) bool { return a != nil && b != nil && *a == *b }
		if same(c.RateRPS, p.RateRPS) || same(c.BurstMs, p.BurstMs) || c.Workers != nil && p.Workers != nil && *c.Workers == *p.Workers {
			return k / len(m.Limits), k % len(m.Limits)
		}
	}
	return -1, -1
}

// colourBar is a map's legend: the colour scale, log or linear, with the
// hatch for overloaded cells and the lines explained.
func colourBar(id, unit string, lo, hi float64, log bool) string {
	const w, h = 560, 70
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="cbar" viewBox="0 0 %d %d" role="img" aria-label="colour scale from %s to %s" xmlns="http://www.w3.org/2000/svg">`, w, h, fmtNum(lo), fmtNum(hi))
	fmt.Fprintf(&b, `<defs><linearGradient id="%s-g">`, id)
	for i := 0; i <= 8; i++ {
		fmt.Fprintf(&b, `<stop offset="%d%%" stop-color="%s"/>`, i*100/8, hex(colormap(float64(i)/8)))
	}
	const x0, bw = 16, 300
	fmt.Fprintf(&b, `</linearGradient><pattern id="hatch-%s-bar" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="8" height="8" fill="#f4f4f4"/><line x1="0" y1="0" x2="0" y2="8" stroke="%s" stroke-width="3"/></pattern></defs>`, id, hatchColour)
	fmt.Fprintf(&b, `<rect x="%d" y="4" width="%d" height="12" fill="url(#%s-g)"/>`, x0, bw, id)
	pos := func(v float64) float64 {
		if log {
			return x0 + math.Log(v/lo)/math.Log(hi/lo)*bw
		}
		return x0 + (v-lo)/(hi-lo)*bw
	}
	var ticks []float64
	if log {
		for _, v := range []float64{1, 1.5, 2, 3, 5, 10, 20, 50, 100} {
			if v >= lo && v <= hi {
				ticks = append(ticks, v)
			}
		}
	} else {
		ticks = []float64{0, 25, 50, 75, 100}
	}
	for _, v := range ticks {
		x := px(pos(v))
		fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="16" y2="20" stroke="#333"/><text class="tick" x="%s" y="31" text-anchor="middle">%s</text>`, x, x, x, fmtNum(v))
	}
	fmt.Fprintf(&b, `<text class="unit" x="%d" y="46" text-anchor="middle">%s</text>`, x0+bw/2, html.EscapeString(unit))
	lx := x0 + bw + 24
	fmt.Fprintf(&b, `<rect x="%d" y="4" width="14" height="12" fill="url(#hatch-%s-bar)" stroke="#999"/><text class="tick" x="%d" y="14">overloaded</text>`, lx, id, lx+20)
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="28" y2="28" stroke="#d62728" stroke-width="2.5"/><text class="tick" x="%d" y="32">mean use = limit</text>`, lx, lx+14, lx+20)
	fmt.Fprintf(&b, `<circle cx="%d" cy="50" r="5" fill="#fff" stroke="#000" stroke-width="2"/><text class="tick" x="%d" y="54">measured</text>`, lx+7, lx+20)
	fmt.Fprintf(&b, `<text class="tick" x="%d" y="66">white lines: p99 x1.5 (dashed), x2, x5 (dotted)</text>`, x0)
	b.WriteString(`</svg>`)
	return b.String()
}

// viridis, as the report's tile maps colour.
var viridis = [][3]float64{
	{68, 1, 84}, {70, 50, 126}, {54, 92, 141}, {39, 127, 142}, {31, 161, 135}, {74, 193, 109}, {160, 218, 57}, {253, 231, 37}, {253, 231, 37},
}

func colormap(t float64) [3]uint8 {
	t = math.Min(math.Max(t, 0), 1) * 8
	i := min(int(t), 7)
	f := t - float64(i)
	var c [3]uint8
	for k := range c {
		c[k] = uint8(math.Round(viridis[i][k]*(1-f) + viridis[i+1][k]*f))
	}
	return c
}

func hex(c [3]uint8) string { return fmt.Sprintf("#%02x%02x%02x", c[0], c[1], c[2]) }

func px(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
