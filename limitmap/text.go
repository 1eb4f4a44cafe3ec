package limitmap

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/throttlelab/throttlelab/units"
)

// axisTitle names the second axis with its unit.
func axisTitle(a Axis) string {
	switch a {
	case AxisRate:
		return "req/s"
	case AxisWorkers:
		return "workers"
	}
	return "burst ms"
}

// fmtLoad writes an axis value shortly.
func fmtLoad(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// fmtRatio writes a p99 ratio in three characters or so: 1.0, 2.4, 12, 140.
func fmtRatio(r float64) string {
	if r < 9.95 {
		return strconv.FormatFloat(r, 'f', 1, 64)
	}
	return strconv.FormatFloat(r, 'f', 0, 64)
}

// WriteText prints the map compactly: the p99 ratio and the throttled share
// of periods as two grids (the highest load on top, "##" for overloaded
// cells), then the measured points beside their simulation.
func WriteText(w io.Writer, m *Map) {
	fmt.Fprintf(w, "map of %s: %s (%d instances) against %s, %d simulated cores, %d runs per cell, seed %d\n",
		m.Experiment, m.Limited, m.Instances, m.Reference, m.Cores, m.Repeats, m.Seed)
	grid := func(title string, hatch bool, val func(c *Cell) string) {
		note := ""
		if hatch {
			note = "; ## overloaded"
		}
		fmt.Fprintf(w, "\n%s (limit per instance across, %s up%s)\n", title, axisTitle(m.Axis), note)
		var b strings.Builder
		fmt.Fprintf(&b, "%8s", axisTitle(m.Axis))
		for _, l := range m.Limits {
			fmt.Fprintf(&b, " %5s", units.FormatMilliCPU(l))
		}
		fmt.Fprintln(w, b.String())
		for r := len(m.Loads) - 1; r >= 0; r-- {
			b.Reset()
			fmt.Fprintf(&b, "%8s", fmtLoad(m.Loads[r]))
			for c := range m.Limits {
				cell := m.Cell(r, c)
				s := val(cell)
				switch {
				case cell.Note != "":
					s = "-"
				case cell.Overloaded && hatch:
					s = "##"
				}
				fmt.Fprintf(&b, " %5s", s)
			}
			fmt.Fprintln(w, b.String())
		}
	}
	grid("p99 / unlimited p99", true, func(c *Cell) string {
		if c.P99Ratio == nil {
			return "-"
		}
		return fmtRatio(*c.P99Ratio)
	})
	grid("throttled periods %", false, func(c *Cell) string {
		return strconv.FormatFloat(100*c.ThrottledPeriodsRatio, 'f', 0, 64)
	})
	if len(m.Measured) == 0 {
		return
	}
	fmt.Fprintln(w, "\nmeasured on real cgroups against simulated:")
	for _, p := range m.Measured {
		fmt.Fprintf(w, "  %s at %s: p99 x%s measured, x%s simulated (%s); throttled %.0f%% measured, %.0f%% simulated\n",
			units.FormatMilliCPU(p.LimitMilli), loadOf(m.Axis, p), fmtRatio(p.Measured.P99Ratio), fmtRatio(p.Simulated.P99Ratio),
			agreement(p), 100*p.Measured.ThrottledPeriodsRatio, 100*p.Simulated.ThrottledPeriodsRatio)
		if busy := Busy(p); busy > 0 {
			fmt.Fprintf(w, "    the reference's p99 was %.1f ms measured, %.1f ms simulated (x%.0f): the machine was busy, the ratios compare little\n",
				p.Measured.ReferenceP99Ms, p.Simulated.ReferenceP99Ms, busy)
		}
	}
}

// Busy says whether a measured point ran on a busy machine: the factor by
// which the reference's measured p99 exceeds its simulated one, when that
// is over 3 (0 otherwise). Its ratios then compare a contended machine
// with an idle one.
func Busy(p Measured) float64 {
	if p.Simulated.ReferenceP99Ms <= 0 {
		return 0
	}
	if f := p.Measured.ReferenceP99Ms / p.Simulated.ReferenceP99Ms; f > 3 {
		return f
	}
	return 0
}

// loadOf writes a measured point's load: "100 req/s".
func loadOf(a Axis, p Measured) string {
	switch {
	case p.RateRPS != nil:
		return fmtLoad(*p.RateRPS) + " req/s"
	case p.Workers != nil:
		return strconv.FormatInt(*p.Workers, 10) + " workers"
	case p.BurstMs != nil:
		return "burst " + fmtLoad(*p.BurstMs) + " ms"
	}
	return string(a)
}

// Agreement is how far apart a point's measured and simulated p99 ratios
// are, as a factor of at least 1 (1.3: one is 1.3 times the other).
func Agreement(p Measured) float64 {
	a, b := p.Measured.P99Ratio, p.Simulated.P99Ratio
	if a <= 0 || b <= 0 {
		return 0
	}
	return max(a/b, b/a)
}

func agreement(p Measured) string {
	f := Agreement(p)
	if f == 0 {
		return "no ratio"
	}
	s := "apart by x" + strconv.FormatFloat(f, 'f', 2, 64)
	if f > 1.5 {
		s += ", more than x1.5"
	}
	return s
}
