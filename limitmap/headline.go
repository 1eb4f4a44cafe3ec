package limitmap

import (
	"github.com/throttlelab/throttlelab/report"
)

// HeadlineBound is the p99 ratio the map's headline asks about: where the
// limited config's p99 passes twice the reference's.
const HeadlineBound = 2

// Headline answers where limits start to hurt in one sentence, from the
// map's cells (report.GridHeadline): what map prints first.
func Headline(m *Map) string {
	g := report.Grid{Limited: m.Limited, Reference: m.Reference, Instances: m.Instances, Load: func(v float64) string { return loadWords(m.Axis, v) }}
	for _, c := range m.Cells {
		if c.Note != "" { // not simulated
			continue
		}
		gc := report.GridCell{LimitMilli: c.LimitMilli, ThrottledPct: 100 * c.ThrottledPeriodsRatio}
		switch {
		case c.RateRPS != nil:
			gc.Load = *c.RateRPS
		case c.Workers != nil:
			gc.Load = float64(*c.Workers)
		case c.BurstMs != nil:
			gc.Load = *c.BurstMs
		}
		if c.P99Ratio != nil && !c.Overloaded {
			gc.P99Ratio = *c.P99Ratio
		}
		g.Cells = append(g.Cells, gc)
	}
	return report.GridHeadline(g, HeadlineBound)
}

// loadWords names an axis value with its unit.
func loadWords(a Axis, v float64) string {
	switch a {
	case AxisRate:
		return fmtLoad(v) + " req/s"
	case AxisWorkers:
		if v == 1 {
			return "1 worker"
		}
		return fmtLoad(v) + " workers"
	}
	return "a " + fmtLoad(v) + " ms burst"
}
