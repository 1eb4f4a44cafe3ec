package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/stats"
	"github.com/throttlelab/throttlelab/units"
)

// Headline answers the question a results directory asks in one sentence,
// from its summary: how the config that fared worst against the reference
// did, with its p99 ratio and that ratio's 95% interval, its throttled share
// of periods and its mean CPU use against its limit. It is what run, sim and
// report print first and what the HTML report opens with. Empty when the
// source has no summary.
func Headline(s *Source) string {
	if s == nil || s.Summary == nil || s.Spec == nil {
		return ""
	}
	return SummaryHeadline(s.Spec, s.Summary)
}

// SummaryHeadline is Headline for an experiment and its summary (with or
// without intervals). Every figure in the sentence is a field of a
// ConfigSummary, formatted: nothing is said that the summary does not hold.
func SummaryHeadline(e *experiment.Experiment, s *record.ExperimentSummary) string {
	if len(s.Configs) == 0 {
		return ""
	}
	loads := map[string]bool{}
	refs := map[string]*record.ConfigSummary{}
	for i := range s.Configs {
		c := &s.Configs[i]
		loads[c.Load] = true
		if c.IsReference {
			refs[c.Load] = c
		}
	}
	// The config furthest above its reference (the first of equals), or,
	// without a reference, the one throttled most (the first of equals).
	var worst *record.ConfigSummary
	others := 0
	for i := range s.Configs {
		c := &s.Configs[i]
		if c.IsReference {
			continue
		}
		others++
		switch {
		case worst == nil:
			worst = c
		case len(refs) > 0 && c.P99VsReference > worst.P99VsReference:
			worst = c
		case len(refs) == 0 && c.ThrottledPct > worst.ThrottledPct:
			worst = c
		}
	}
	if worst == nil { // only the reference ran
		worst = &s.Configs[0]
	}
	var b strings.Builder
	var notes []string
	b.WriteString(instancesOf(worst.Config, worst.Instances))
	ref := refs[worst.Load]
	if ref != nil && !worst.IsReference && worst.P99VsReference > 0 {
		fmt.Fprintf(&b, " p99 was %sx%s %s", fmtRatio(worst.P99VsReference), fmtInterval(worst.P99VsReferenceCI95, fmtRatio), onesOf(ref.Config, ref.Instances))
		notes = append(notes, fmt.Sprintf("%s ms against %s ms", FormatMs(worst.P99Ms), FormatMs(ref.P99Ms)))
	} else {
		fmt.Fprintf(&b, " p99 was %s ms%s", FormatMs(worst.P99Ms), fmtInterval(worst.P99MsCI95, FormatMs))
	}
	if len(loads) > 1 {
		fmt.Fprintf(&b, " under load %s", worst.Load)
	}
	if others > 1 {
		notes = append(notes, fmt.Sprintf("the highest of %d configs", others))
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(notes, "; "))
	}
	limit := limitOf(e, worst.Config)
	each := 0.0
	if worst.Instances > 0 {
		each = worst.MeanCores / float64(worst.Instances)
	}
	their := "their"
	if worst.Instances == 1 {
		their = "its"
	}
	switch {
	case limit > 0:
		fmt.Fprintf(&b, ", throttled in %s of periods while using %.2f of %s %s CPU on average", fmtPct(worst.ThrottledPct), each, their, strconv.FormatFloat(float64(limit)/1000, 'f', -1, 64))
	case worst.ThrottledPct > 0:
		fmt.Fprintf(&b, ", throttled in %s of periods while using %.2f CPU each on average", fmtPct(worst.ThrottledPct), each)
	default:
		fmt.Fprintf(&b, ", using %.2f CPU each on average", each)
	}
	out := b.String()
	return strings.ToUpper(out[:1]) + out[1:] + "."
}

// instancesOf names a config's instances as the subject of the sentence.
func instancesOf(config string, n int) string {
	if n == 1 {
		return "the " + config + " instance's"
	}
	return "the " + config + " instances'"
}

// onesOf names the reference's instances after "the limited instances' p99
// was 2x ...".
func onesOf(config string, n int) string {
	if n == 1 {
		return "the " + config + " one's"
	}
	return "the " + config + " ones'"
}

// limitOf is a config's CPU limit per instance in millicores, 0 without one.
func limitOf(e *experiment.Experiment, config string) int64 {
	if e == nil {
		return 0
	}
	for _, c := range e.Spec.Configs {
		if c.Name == config {
			return c.CPU.Limit.Milli
		}
	}
	return 0
}

// fmtRatio writes a ratio with two significant digits or so: 0.98, 1.4, 5.6, 12.
func fmtRatio(v float64) string {
	switch {
	case v < 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 9.95:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// fmtPct writes a percentage: whole points, or one decimal under 10%.
func fmtPct(v float64) string {
	if v > 0 && v < 9.95 {
		return strconv.FormatFloat(v, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + "%"
}

// fmtInterval writes " [lo, hi]", or nothing without an interval.
func fmtInterval(iv *stats.Interval, f func(float64) string) string {
	if iv == nil {
		return ""
	}
	return " [" + f(iv[0]) + ", " + f(iv[1]) + "]"
}

// GridCell is one cell of a map of limit against load, as GridHeadline
// reads it.
type GridCell struct {
	LimitMilli int64
	Load       float64
	// P99Ratio is the p99 against the reference's at the same load; 0 for
	// an overloaded cell (the limits add up to less than the work offered).
	P99Ratio     float64
	ThrottledPct float64
}

// Grid is a map of the limited config's limit per instance against a load
// axis, each cell compared with the unlimited reference at the same load.
type Grid struct {
	Limited, Reference string
	Instances          int
	// Load names an axis value in words: "200 req/s", "8 workers".
	Load  func(float64) string
	Cells []GridCell
}

// GridHeadline answers what a map asks, where a limit starts to hurt, in
// one sentence from its cells: the smallest limit per instance from which
// up every cell stays within bound times the reference's p99, and the worst
// cell just below it (or of the whole map when no limit or every limit
// does).
func GridHeadline(g Grid, bound float64) string {
	if len(g.Cells) == 0 {
		return ""
	}
	var limits []int64
	worst := map[int64]GridCell{}
	bad := map[int64]bool{}
	for _, c := range g.Cells {
		w, seen := worst[c.LimitMilli]
		if !seen {
			limits = append(limits, c.LimitMilli)
		}
		if !seen || worse(c, w) {
			worst[c.LimitMilli] = c
		}
		if c.P99Ratio == 0 || c.P99Ratio >= bound {
			bad[c.LimitMilli] = true
		}
	}
	slices.Sort(limits)
	// The smallest limit from which up no cell is bad.
	from := len(limits)
	for i := len(limits) - 1; i >= 0 && !bad[limits[i]]; i-- {
		from = i
	}
	who := instancesOf(g.Limited, g.Instances) + " p99"
	within := fmt.Sprintf("within %sx %s", fmtRatio(bound), onesOf(g.Reference, 1))
	loads := "at every load from " + g.Load(minLoad(g.Cells)) + " to " + g.Load(maxLoad(g.Cells))
	if minLoad(g.Cells) == maxLoad(g.Cells) {
		loads = "at " + g.Load(minLoad(g.Cells))
	}
	var s string
	switch {
	case from == 0:
		w := worst[limits[0]]
		for _, l := range limits {
			if worse(worst[l], w) {
				w = worst[l]
			}
		}
		s = fmt.Sprintf("every limit mapped (%s to %s per instance) kept %s %s %s; the closest %s", units.FormatMilliCPU(limits[0]), units.FormatMilliCPU(limits[len(limits)-1]), who, within, loads, cellWords(g, w))
	case from == len(limits):
		s = fmt.Sprintf("no limit mapped kept %s %s %s: the largest, %s per instance, %s", who, within, loads, units.FormatMilliCPU(limits[len(limits)-1]), cellWords(g, worst[limits[len(limits)-1]]))
	default:
		below := limits[from-1]
		s = fmt.Sprintf("%s stayed %s %s with a limit of %s per instance or more; at %s it %s", who, within, loads, units.FormatMilliCPU(limits[from]), units.FormatMilliCPU(below), cellWords(g, worst[below]))
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

// worse says whether cell a is further from the reference than b: an
// overloaded cell is the worst.
func worse(a, b GridCell) bool {
	if (a.P99Ratio == 0) != (b.P99Ratio == 0) {
		return a.P99Ratio == 0
	}
	return a.P99Ratio > b.P99Ratio
}

func cellWords(g Grid, c GridCell) string {
	if c.P99Ratio == 0 {
		return fmt.Sprintf("was overloaded at %s (the limits add up to less than the work offered)", g.Load(c.Load))
	}
	return fmt.Sprintf("reached %sx at %s, throttled in %s of periods", fmtRatio(c.P99Ratio), g.Load(c.Load), fmtPct(c.ThrottledPct))
}

func minLoad(cs []GridCell) float64 {
	v := cs[0].Load
	for _, c := range cs {
		v = min(v, c.Load)
	}
	return v
}

func maxLoad(cs []GridCell) float64 {
	v := cs[0].Load
	for _, c := range cs {
		v = max(v, c.Load)
	}
	return v
}
