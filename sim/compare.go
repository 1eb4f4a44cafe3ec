package sim

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
)

// Tolerances are how close a simulation must come to a measurement.
type Tolerances struct {
	// ThrottledPoints is the allowed gap in throttled periods, in percentage points.
	ThrottledPoints float64
	// Latency is the allowed relative error of p50 and p99; Goodput of
	// throughput (and burst goodput).
	Latency, Goodput float64
}

// DefaultTolerances are the validation targets: 10 points, 25%, 15%.
var DefaultTolerances = Tolerances{ThrottledPoints: 10, Latency: 0.25, Goodput: 0.15}

// Metric is one figure, measured and simulated.
type Metric struct {
	Name                string
	Measured, Simulated float64
	// Error is the simulated figure's distance from the measured one: in
	// points for percentages, relative otherwise.
	Error float64
	OK    bool
}

// Comparison is one config (or neighbour) under one load.
type Comparison struct {
	Subject string
	Metrics []Metric
}

func relative(name string, meas, sim, tol float64) Metric {
	m := Metric{Name: name, Measured: meas, Simulated: sim}
	if meas != 0 {
		m.Error = (sim - meas) / meas
	} else if sim != 0 {
		m.Error = math.Inf(1)
	}
	m.OK = math.Abs(m.Error) <= tol
	return m
}

func points(name string, meas, sim, tol float64) Metric {
	m := Metric{Name: name, Measured: meas, Simulated: sim, Error: sim - meas}
	m.OK = math.Abs(m.Error) <= tol
	return m
}

// Compare sets a simulation beside a measurement of the same experiment:
// per config and load the throttled share of periods, p50, p99 and
// throughput (medians over repeats, as the summary takes them), and per
// neighbour its throttling and, for burst workers, goodput per cycle.
func Compare(e *experiment.Experiment, measured, simulated []*record.Run, measDir, simDir string, tol Tolerances) []Comparison {
	ms, ss := record.Summarize(e, measured), record.Summarize(e, simulated)
	var out []Comparison
	for _, mc := range ms.Configs {
		for _, sc := range ss.Configs {
			if sc.Config != mc.Config || sc.Load != mc.Load {
				continue
			}
			out = append(out, Comparison{Subject: mc.Config + " / " + mc.Load, Metrics: []Metric{
				points("throttled %", mc.ThrottledPct, sc.ThrottledPct, tol.ThrottledPoints),
				relative("p50 ms", mc.P50Ms, sc.P50Ms, tol.Latency),
				relative("p99 ms", mc.P99Ms, sc.P99Ms, tol.Latency),
				relative("req/s", mc.ThroughputRPS, sc.ThroughputRPS, tol.Goodput),
			}})
		}
	}
	seen := map[string]bool{}
	var all []experiment.Neighbour
	for _, c := range e.Spec.Configs {
		for _, n := range e.NeighboursOf(c) {
			if !seen[n.Name] {
				seen[n.Name] = true
				all = append(all, n)
			}
		}
	}
	for _, n := range all {
		if n.Kind == "probe" {
			continue
		}
		mt, st := neighbourThrottled(measured, n.Name), neighbourThrottled(simulated, n.Name)
		c := Comparison{Subject: "neighbour " + n.Name, Metrics: []Metric{points("throttled %", mt, st, tol.ThrottledPoints)}}
		if n.Kind == "burst" {
			mg, err1 := burstGoodput(measDir, measured, n.Name)
			sg, err2 := burstGoodput(simDir, simulated, n.Name)
			if err1 == nil && err2 == nil {
				c.Metrics = append(c.Metrics, relative("goodput Mit/cycle", mg/1e6, sg/1e6, tol.Goodput))
			}
		}
		out = append(out, c)
	}
	return out
}

// neighbourThrottled is the share of a neighbour's periods that were
// throttled, over all runs.
func neighbourThrottled(runs []*record.Run, name string) float64 {
	var p, t uint64
	for _, r := range runs {
		for g, st := range r.Neighbours {
			if record.IsNeighbourGroup(g, name) {
				p += st.Periods
				t += st.ThrottledPeriods
			}
		}
	}
	if p == 0 {
		return 0
	}
	return 100 * float64(t) / float64(p)
}

// burstGoodput is a burst worker's mean goodput (iterations, all workers) per
// full cycle, over all runs.
func burstGoodput(dir string, runs []*record.Run, name string) (float64, error) {
	var sum float64
	var n int
	for _, r := range runs {
		cycles, err := record.ReadBurstCycles(record.RunIDDir(dir, r.ID), name)
		if err != nil {
			return 0, err
		}
		for _, c := range cycles {
			sum += float64(c.Total)
			n++
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("no burst cycles for %s", name)
	}
	return sum / float64(n), nil
}

// WriteComparison prints the comparison as a table, and returns how many
// figures are outside the tolerances.
func WriteComparison(w io.Writer, cs []Comparison) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "subject\tfigure\tmeasured\tsimulated\terror\twithin tolerance\t")
	bad := 0
	for _, c := range cs {
		for _, m := range c.Metrics {
			e := fmt.Sprintf("%+.0f%%", 100*m.Error)
			if m.Name == "throttled %" {
				e = fmt.Sprintf("%+.1f pts", m.Error)
			}
			ok := "yes"
			if !m.OK {
				ok, bad = "NO", bad+1
			}
			fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%s\t%s\t\n", c.Subject, m.Name, m.Measured, m.Simulated, e, ok)
		}
	}
	tw.Flush()
	return bad
}
