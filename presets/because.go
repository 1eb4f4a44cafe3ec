package presets

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
)

// Group is what one group of a config did over the config's runs, as a
// check that did not pass is explained: its throttling per CFS period, the
// CPUs it could run on, and the cores it used against what it may use.
type Group struct {
	// Config is the config; Name the group: "" for the config's instances,
	// else the neighbour's name (its pods together).
	Config, Name string
	// Periods and Throttled count the group's CFS periods and those it was
	// throttled in, summed over runs and pods (0 periods: no quota).
	Periods, Throttled uint64
	// Cpus is the cpuset the group was confined to ("" for any CPU).
	Cpus string
	// MeanCores is the group's mean use per instance or pod in cores,
	// averaged over runs; Limit each one's limit in cores (0 for none).
	MeanCores, Limit float64
	// Asks is what a burst neighbour's duty cycle asks for per pod, in
	// cores (workers x busy / (busy + sleep)); 0 for other groups.
	Asks float64
	// WaitMs is the mean time a request was runnable but not running in
	// the server (wall - CPU - queue, from Server-Timing); -1 when the
	// group serves no requests or its requests carry no server timing.
	WaitMs float64
}

// ThrottledPct is the share of the group's periods it was throttled in.
func (g Group) ThrottledPct() float64 {
	if g.Periods == 0 {
		return 0
	}
	return 100 * float64(g.Throttled) / float64(g.Periods)
}

// Groups computes each config's groups from the results, configs in the
// spec's order, each config's instances first and then its neighbours by
// name.
func (r *Results) Groups() []Group {
	var out []Group
	for _, c := range r.Spec.Spec.Configs {
		runs := r.runsOf(c.Name)
		if len(runs) == 0 {
			continue
		}
		g := Group{Config: c.Name, Cpus: runs[0].Settings.Cpus, Limit: runs[0].Settings.LimitCores(), WaitMs: -1}
		n := 0
		for _, run := range runs {
			g.Periods += run.Total.Periods
			g.Throttled += run.Total.ThrottledPeriods
			for _, u := range run.Usage {
				g.MeanCores += u.Mean
				n++
			}
		}
		if n > 0 {
			g.MeanCores /= float64(n)
		}
		if w, err := r.meanStall(c.Name); err == nil {
			g.WaitMs = w
		}
		out = append(out, g)
		for _, nb := range r.Spec.NeighboursOf(c) {
			if ng, ok := r.neighbourGroup(c.Name, nb, runs); ok {
				out = append(out, ng)
			}
		}
	}
	return out
}

// neighbourGroup sums up one neighbour's pods over a config's runs (false
// when the runs recorded none of it: a probe has no group).
func (r *Results) neighbourGroup(config string, nb experiment.Neighbour, runs []*record.Run) (Group, bool) {
	g := Group{Config: config, Name: nb.Name, Cpus: nb.CPU.Cpuset.String(), WaitMs: -1}
	if !nb.CPU.Limit.IsZero() {
		g.Limit = nb.CPU.Limit.Cores()
	}
	if nb.Kind == "burst" && nb.Busy.Duration > 0 {
		g.Asks = float64(nb.Workers) * float64(nb.Busy.Duration) / float64(nb.Busy.Duration+nb.Sleep.Duration)
	}
	n := 0
	for _, run := range runs {
		for _, name := range slices.Sorted(maps.Keys(run.NeighbourUsage)) {
			if !record.IsNeighbourGroup(name, nb.Name) {
				continue
			}
			g.MeanCores += run.NeighbourUsage[name].Mean
			n++
			st := run.Neighbours[name]
			g.Periods += st.Periods
			g.Throttled += st.ThrottledPeriods
		}
	}
	if n == 0 {
		return g, false
	}
	g.MeanCores /= float64(n)
	return g, true
}

// who names the group: the config, or the config's neighbour.
func (g Group) who() string {
	if g.Name == "" {
		return g.Config
	}
	return g.Config + "'s " + g.Name
}

// String is the group's figures in words.
func (g Group) String(cores int) string {
	who := g.who()
	if g.Name != "" {
		who += " (each pod)"
	}
	var f []string
	if g.Periods == 0 {
		f = append(f, "no quota, no periods")
	} else {
		f = append(f, fmt.Sprintf("throttled in %.0f%% of periods (%d of %d)", g.ThrottledPct(), g.Throttled, g.Periods))
	}
	if g.WaitMs >= 0 {
		f = append(f, fmt.Sprintf("%.0f ms run-queue wait per request", g.WaitMs))
	}
	if g.Cpus != "" {
		f = append(f, "on CPUs "+g.Cpus)
	} else {
		f = append(f, fmt.Sprintf("on any of the %d CPUs", cores))
	}
	use := fmt.Sprintf("%.2f cores used", g.MeanCores)
	switch {
	case g.Asks > 0 && g.Limit > 0:
		use += fmt.Sprintf(" against %.2f its bursts ask and its %.2f-CPU limit", g.Asks, g.Limit)
	case g.Asks > 0:
		use += fmt.Sprintf(" against %.2f its bursts ask", g.Asks)
	case g.Limit > 0:
		use += fmt.Sprintf(" of its %.2f-CPU limit", g.Limit)
	}
	return who + ": " + strings.Join(append(f, use), ", ")
}

// because explains, from the run's own figures, a check that did not pass:
// each group's throttling, run-queue wait, CPUs and use. It leads with
// "The model" for a simulated run, whose figures are the simulator's.
func because(r *Results) string {
	gs := r.Groups()
	if len(gs) == 0 {
		return ""
	}
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = g.String(r.Env.Cores)
	}
	lead := "Measured"
	if r.Env.Backend == "sim" {
		lead = "The model"
	}
	return lead + ": " + strings.Join(parts, "; ")
}

// Agreement says, group by group, whether the simulated twin of a measured
// run agrees with it on the figures because gives: the share of periods
// throttled within 10 points, the run-queue wait within 25% or 1 ms, and the
// cores used within 25% or 0.05 cores (sim --compare's tolerances, with a
// floor for figures near zero). model is the twin's results: the same
// spec's configs and neighbours.
func Agreement(measured, model *Results) string {
	mod := map[string]Group{}
	for _, g := range model.Groups() {
		mod[g.Config+"/"+g.Name] = g
	}
	var agree, differ []string
	for _, m := range measured.Groups() {
		s, ok := mod[m.Config+"/"+m.Name]
		if !ok {
			continue
		}
		who := m.who()
		var d []string
		if math.Abs(m.ThrottledPct()-s.ThrottledPct()) > 10 {
			d = append(d, fmt.Sprintf("throttled in %.0f%% of periods, the model %.0f%%", m.ThrottledPct(), s.ThrottledPct()))
		}
		if m.WaitMs >= 0 && s.WaitMs >= 0 && math.Abs(s.WaitMs-m.WaitMs) > max(0.25*m.WaitMs, 1) {
			d = append(d, fmt.Sprintf("%.0f ms run-queue wait per request, the model %.0f ms", m.WaitMs, s.WaitMs))
		}
		if math.Abs(s.MeanCores-m.MeanCores) > max(0.25*m.MeanCores, 0.05) {
			d = append(d, fmt.Sprintf("used %.2f cores, the model %.2f", m.MeanCores, s.MeanCores))
		}
		if len(d) == 0 {
			agree = append(agree, who)
		} else {
			differ = append(differ, who+" "+strings.Join(d, " and "))
		}
	}
	switch {
	case len(agree)+len(differ) == 0:
		return ""
	case len(differ) == 0:
		return "the model agrees on every group's throttling, run-queue wait and use (" + strings.Join(agree, ", ") + ")"
	}
	return "the model differs: " + strings.Join(differ, "; ")
}

// WriteAgreement writes, for a preset's simulated twin in model of the
// measured run in measured (sim --compare), whether the model agrees with
// the measurement group by group (Agreement); nothing for a nil Info (no
// preset) or without a measured directory.
func (i *Info) WriteAgreement(w io.Writer, measured, model string) error {
	if i == nil || measured == "" {
		return nil
	}
	m, err := ReadResults(measured)
	if err != nil {
		return err
	}
	s, err := ReadResults(model)
	if err != nil {
		return err
	}
	if a := Agreement(m, s); a != "" {
		_, err = fmt.Fprintln(w, a)
	}
	return err
}
