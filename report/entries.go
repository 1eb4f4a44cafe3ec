package report

import (
	"slices"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
)

// entry is one config under one load in one source: the unit every plot and
// table row is about.
type entry struct {
	srcIdx int
	config experiment.Config
	load   experiment.Load
	runs   []*Run
	ref    bool
	// color and dash tell entries apart: the colour follows the config's name
	// (so a simulated and a measured config match), the dash its source, or its
	// config when there is one source, so lines differ without colour too.
	color, dash string
	label       string
	// sum is the config's summary in its source, with the intervals.
	sum *record.ConfigSummary
}

// Okabe and Ito's palette, distinguishable with the common colour-vision
// deficiencies; grey is kept for the reference.
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C564B"}
var dashes = []string{"", "7 3", "2 2", "9 3 2 3", "4 4", "1 3"}

const refColor = "#9a9a9a"

func buildEntries(sources []*Source) []*entry {
	colorOf := map[string]string{}
	var out []*entry
	for si, s := range sources {
		for _, l := range s.Spec.Spec.Loads {
			for ci, c := range s.Spec.Spec.Configs {
				e := &entry{srcIdx: si, config: c, load: l, ref: c.Name == s.Spec.Spec.Reference}
				if s.Summary != nil {
					for i := range s.Summary.Configs {
						if cs := &s.Summary.Configs[i]; cs.Config == c.Name && cs.Load == l.Name {
							e.sum = cs
						}
					}
				}
				for _, r := range s.Runs {
					if r.Config == c.Name && r.Load == l.Name {
						e.runs = append(e.runs, r)
					}
				}
				if len(e.runs) == 0 {
					continue
				}
				if _, ok := colorOf[c.Name]; !ok {
					colorOf[c.Name] = palette[len(colorOf)%len(palette)]
				}
				e.color = colorOf[c.Name]
				if len(sources) > 1 {
					e.dash = dashes[si%len(dashes)]
					e.label = s.Label + ": " + c.Name
				} else {
					e.dash = dashes[ci%len(dashes)]
					e.label = c.Name
				}
				if e.ref {
					e.label += " (reference)"
				}
				out = append(out, e)
			}
		}
	}
	return out
}

// loadNames returns the loads in the order of their first appearance.
func loadNames(es []*entry) []string {
	var names []string
	for _, e := range es {
		if !slices.Contains(names, e.load.Name) {
			names = append(names, e.load.Name)
		}
	}
	return names
}

// okLatencies returns the latencies of the successful requests in ms, sorted.
func okLatencies(rs []*Run) []float64 {
	var v []float64
	for _, r := range rs {
		for _, q := range r.Requests {
			if q.OK {
				v = append(v, float64(q.Latency)/1e6)
			}
		}
	}
	slices.Sort(v)
	return v
}

// rowOf sums an entry up through the one aggregation (record.Aggregate),
// and adds what only the request records tell: the mean stall.
func rowOf(e *entry) record.Row {
	sums := make([]*record.Run, len(e.runs))
	for i, run := range e.runs {
		sums[i] = run.Run
	}
	r := record.Row{Label: e.label, ConfigSummary: record.Aggregate(e.config, e.load.Name, sums)}
	r.IsReference = e.ref
	if s := e.sum; s != nil {
		r.MeanMsCI95, r.P50MsCI95, r.P90MsCI95, r.P99MsCI95, r.P999MsCI95 = s.MeanMsCI95, s.P50MsCI95, s.P90MsCI95, s.P99MsCI95, s.P999MsCI95
		r.P99VsReferenceCI95 = s.P99VsReferenceCI95
	}
	var stall time.Duration
	var stalls int
	for _, run := range e.runs {
		for _, q := range run.Requests {
			if q.OK && q.Stall >= 0 {
				stall += q.Stall
				stalls++
			}
		}
	}
	if stalls > 0 {
		r.StallMs = float64(stall) / float64(stalls) / 1e6
	}
	return r
}

// rows returns the table rows of one load, with p99 against the reference of
// the same source.
func rows(es []*entry, load string) []record.Row {
	var out []record.Row
	refP99 := map[int]float64{}
	for _, e := range es {
		if e.load.Name == load && e.ref {
			refP99[e.srcIdx] = rowOf(e).P99Ms
		}
	}
	for _, e := range es {
		if e.load.Name != load {
			continue
		}
		r := rowOf(e)
		if ref := refP99[e.srcIdx]; ref > 0 {
			r.P99VsReference = r.P99Ms / ref
		}
		out = append(out, r)
	}
	return out
}

var fmtMs = FormatMs
