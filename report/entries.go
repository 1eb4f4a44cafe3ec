package report

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/loadgen"
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

// row is one line of the results table.
type row struct {
	Label                        string
	Ref                          bool
	Runs                         int
	Count, Errors                int64
	RPS                          float64
	P50, P90, P99, P999, Max     float64
	ThrottledPct, ThrottledSec   float64
	StallMs                      float64
	MeanCores, Peak100ms, Peak1s float64
	P99VsRef                     float64
	SameInstance, SameIfRandom   float64
	Instances                    int
}

func medianOf(rs []*Run, f func(*loadgen.Summary) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r.Summary)
	}
	return experiment.Median(v)
}

// rowOf sums an entry up: latency figures and throughput are medians over the
// repeats (so one odd repeat does not move them), counts and throttling sums.
func rowOf(e *entry) row {
	r := row{Label: e.label, Ref: e.ref, Runs: len(e.runs), Instances: e.config.Instances}
	var periods, throttled uint64
	var stall time.Duration
	var stalls int
	for _, run := range e.runs {
		r.Count += run.Summary.Requests
		r.Errors += run.Summary.Requests - run.Summary.OK
		periods += run.Total.Periods
		throttled += run.Total.ThrottledPeriods
		r.ThrottledSec += float64(run.Total.ThrottledUsec) / 1e6
		for _, u := range run.Usage {
			r.MeanCores += u.Mean / float64(len(e.runs))
			r.Peak100ms = math.Max(r.Peak100ms, u.Peak100ms)
			r.Peak1s = math.Max(r.Peak1s, u.Peak1s)
		}
		r.SameInstance += run.Summary.SameInstanceRate / float64(len(e.runs))
		for _, q := range run.Requests {
			if q.OK && q.Stall >= 0 {
				stall += q.Stall
				stalls++
			}
		}
	}
	if periods > 0 {
		r.ThrottledPct = 100 * float64(throttled) / float64(periods)
	}
	if stalls > 0 {
		r.StallMs = float64(stall) / float64(stalls) / 1e6
	}
	if e.config.Instances > 0 {
		r.SameIfRandom = 1 / float64(e.config.Instances)
	}
	r.RPS = medianOf(e.runs, func(s *loadgen.Summary) float64 { return s.ThroughputRPS })
	r.P50 = medianOf(e.runs, func(s *loadgen.Summary) float64 { return s.Latency.P50 })
	r.P90 = medianOf(e.runs, func(s *loadgen.Summary) float64 { return s.Latency.P90 })
	r.P99 = medianOf(e.runs, func(s *loadgen.Summary) float64 { return s.Latency.P99 })
	r.P999 = medianOf(e.runs, func(s *loadgen.Summary) float64 { return s.Latency.P999 })
	for _, run := range e.runs {
		r.Max = math.Max(r.Max, run.Summary.Latency.Max)
	}
	return r
}

// rows returns the table rows of one load, with p99 against the reference of
// the same source.
func rows(es []*entry, load string) []row {
	var out []row
	refP99 := map[int]float64{}
	for _, e := range es {
		if e.load.Name == load && e.ref {
			refP99[e.srcIdx] = rowOf(e).P99
		}
	}
	for _, e := range es {
		if e.load.Name != load {
			continue
		}
		r := rowOf(e)
		if ref := refP99[e.srcIdx]; ref > 0 {
			r.P99VsRef = r.P99 / ref
		}
		out = append(out, r)
	}
	return out
}

func fmtMs(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 1000:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}
