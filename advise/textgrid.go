package advise

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
)

// WriteTextGrid writes everything behind WriteText's answer: the answer
// and why, the knee at every share, the Kubernetes snippet and how to set
// a burst, the samples, every warning, every row of the grid (by period,
// the rows without burst by limit, then the rows with burst by limit), and
// the coarse recommenders' table.
func WriteTextGrid(w io.Writer, a *Advice) error {
	var b strings.Builder
	s := a.Sampled
	b.WriteString(Answer(a) + "\n")
	for _, l := range whyLines(a) {
		b.WriteString(l + "\n")
	}
	if k := KneeText(a); k != "" {
		b.WriteString(k + "\n")
	}
	if a.Recommendation.Met {
		b.WriteString("\n" + KubernetesSnippet(a.Recommendation.Evaluation))
	}
	if wb := a.Recommendation.WithBurst; wb != nil {
		fmt.Fprintf(&b, "\nWith CPU burst: limit %s with a burst of %s (%d us) meets it too: %s throttled, p99 added delay %s.\n",
			formatMilli(wb.LimitMilli), formatMilli(wb.BurstMilli), wb.BurstUsec, ShareRange(wb.ThrottledRatio, wb.ThrottledRatioRange), delayText(a, *wb))
		b.WriteString(BurstHowTo(*wb) + "\n")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "%s: %.1f s in %d samples, mean %.3f cores, highest 10 ms %.2f cores (%s)\n",
		s.Source, s.DurationSeconds, s.Samples, s.MeanCores, s.MaxCores10ms, parallelism(s))
	if s.CPUStat.Periods > 0 {
		fmt.Fprintf(&b, "while sampled the group had %d periods, %d throttled (%.1f%%), %.3f s throttled, %d bursts\n",
			s.CPUStat.Periods, s.CPUStat.ThrottledPeriods, 100*float64(s.CPUStat.ThrottledPeriods)/float64(s.CPUStat.Periods),
			float64(s.CPUStat.ThrottledUsec)/1e6, s.CPUStat.Bursts)
	}
	if a.Audit != nil {
		b.WriteString(a.Audit.String() + "\n")
	}
	for _, l := range briefWarnings(a) {
		b.WriteString(l + "\n")
	}
	writeGrid(&b, a)

	r := a.Recommendation
	switch {
	case r.LowerBound:
		fmt.Fprintf(&b, "\nThe group was throttled while sampled (%d of %d periods): the demand it had above its limit was never seen.\nThe advice is a lower bound: sample it without a limit (or a higher one) to know.\n",
			s.CPUStat.ThrottledPeriods, s.CPUStat.Periods)
	case r.Reconstructed:
		fmt.Fprintf(&b, "\nThe group was throttled while sampled (%d of %d periods): its limit spread its bursts over periods.\nThe demand was rebuilt from the throttling counters as the most bursty they allow: the advice errs high, not low.\n",
			s.CPUStat.ThrottledPeriods, s.CPUStat.Periods)
	}
	writeBaselines(&b, a)
	_, err := io.WriteString(w, b.String())
	return err
}

// gridOrder is the order of the grid's rows: by period, the rows without
// burst before the rows with burst, each by limit; the index in a.Evaluations.
func gridOrder(evs []Evaluation) []int {
	ix := make([]int, len(evs))
	for i := range ix {
		ix[i] = i
	}
	sort.SliceStable(ix, func(i, j int) bool {
		a, b := evs[ix[i]], evs[ix[j]]
		if a.PeriodUsec != b.PeriodUsec {
			return a.PeriodUsec < b.PeriodUsec
		}
		if (a.BurstMilli > 0) != (b.BurstMilli > 0) {
			return b.BurstMilli > 0
		}
		if a.LimitMilli != b.LimitMilli {
			return a.LimitMilli < b.LimitMilli
		}
		return a.BurstMilli < b.BurstMilli
	})
	return ix
}

// writeGrid writes every evaluation, grouped by gridOrder, an empty row
// between groups, with the recommendation's rows marked <.
func writeGrid(b *strings.Builder, a *Advice) {
	s := a.Sampled
	fmt.Fprintf(b, "\nPredicted (means over %s of the period; [low-high] over the %d blocks and at least %.0f%% less or more use; WORST is the worst phase):\n", phasesText(a), len(a.Window.Blocks), LevelSpread*100)
	if s.WallClock {
		b.WriteString("wall-clock demand: work that finds the quota spent is lost (LOST s), not delayed\n")
	}
	win, blk := delaySpans(a)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	lostHead := ""
	if s.WallClock {
		lostHead = "LOST s\t"
	}
	head := "LIMIT\tBURST\tPERIOD\tTHROTTLED\t[low-high]\tWORST\tTHR s\tBURSTS\t" + lostHead + "DELAY p50\tp99\t[low-high]\tmax\t\t"
	fmt.Fprintln(tw, head)
	counted, sat, unbounded, beyond := 0, 0, 0, false
	ms := func(x, span float64) string {
		t := msText(x, span)
		if strings.HasPrefix(t, ">") {
			beyond = true
			return t
		}
		return t + "ms"
	}
	type group struct {
		period int64
		burst  bool
	}
	var last *group
	for _, i := range gridOrder(a.Evaluations) {
		e := a.Evaluations[i]
		g := group{e.PeriodUsec, e.BurstMilli > 0}
		if last != nil && *last != g {
			fmt.Fprintln(tw, strings.Repeat("\t", strings.Count(head, "\t")))
		}
		last = &g
		burst := "-"
		if e.BurstMilli > 0 {
			burst = formatMilli(e.BurstMilli)
		}
		mark := ""
		if e.LimitMilli == a.Recommendation.LimitMilli && e.BurstMilli == 0 && e.PeriodUsec == a.Recommendation.PeriodUsec && a.Recommendation.Met {
			mark = "<"
		}
		if w := a.Recommendation.WithBurst; w != nil && e.Point() == w.Point() {
			mark = "<"
		}
		lost := ""
		if s.WallClock {
			lost = fmt.Sprintf("%.2f\t", e.LostSeconds)
		}
		thr, del := "", ""
		if r := e.ThrottledRatioRange; r != nil {
			thr = fmt.Sprintf("[%.1f-%.1f%%]", 100*r[0], 100*r[1])
		}
		if r := e.DelayP99MsRange; r != nil {
			lo, hi := msText(r[0], blk), msText(r[1], blk)
			beyond = beyond || strings.HasPrefix(hi, ">") || strings.HasPrefix(lo, ">")
			del = "[" + lo + "-" + hi + "]"
		}
		if e.DelayUnbounded {
			del = "[no end]*"
			unbounded++
		}
		if e.Saturated || e.CountsOnly {
			// Counted, not replayed: no throttled time, bursts or delays;
			// saturated, work waits without end and there are no delays to give.
			delays := "-\t-\t\t-"
			if e.Saturated {
				delays = "saturated\t*\t\t*"
				sat++
			} else {
				counted++
			}
			if s.WallClock {
				lost = "-\t"
			}
			fmt.Fprintf(tw, "%s\t%s\t%dms\t%.1f%%\t%s\t%.1f%%\t-\t-\t%s%s\t%s\t\n",
				formatMilli(e.LimitMilli), burst, e.PeriodUsec/1000, 100*e.ThrottledRatio, thr, 100*e.ThrottledRatioWorst, lost, delays, mark)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%dms\t%.1f%%\t%s\t%.1f%%\t%.2f\t%.0f\t%s%s\t%s\t%s\t%s\t%s\t\n",
			formatMilli(e.LimitMilli), burst, e.PeriodUsec/1000, 100*e.ThrottledRatio, thr, 100*e.ThrottledRatioWorst,
			e.ThrottledSeconds, e.Bursts, lost, ms(e.DelayP50Ms, win), ms(e.DelayP99Ms, win), del, ms(e.DelayMaxMs, win), mark)
	}
	tw.Flush()
	if counted > 0 {
		fmt.Fprintf(b, "(- : %d rows counted in one pass over the period sums, not replayed: exact throttled counts; throttled time, bursts and delays not given)\n", counted)
	}
	if sat > 0 || unbounded > 0 {
		fmt.Fprintf(b, "(* : %s, over the window (saturated, no delays: counted, not replayed) or in a block or with %.0f%% more use (no upper end))\n", saturatedText, LevelSpread*100)
	}
	if beyond {
		fmt.Fprintf(b, "(>X : longer than the samples can show: X is the window for a value over it, a block for an interval's end)\n")
	}
}

// writeBaselines writes the coarse recommenders' table.
func writeBaselines(b *strings.Builder, a *Advice) {
	b.WriteString("\nWhat coarse recommenders would set from the same samples, and what it would cause:\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RECOMMENDER\tLIMIT\tTHROTTLED\tDELAY p99\tHOW")
	win, _ := delaySpans(a)
	countedBl := false
	for _, bl := range a.Baselines {
		if bl.Evaluation == nil {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t%s: missing, %s\n", bl.Name, bl.How, bl.Missing)
			continue
		}
		how := bl.How
		if bl.Windows > 0 {
			how += fmt.Sprintf(" (over %d windows stepping 1 s)", bl.Windows)
		}
		delay := msText(bl.DelayP99Ms, win)
		if !strings.HasPrefix(delay, ">") {
			delay += "ms"
		}
		switch {
		case bl.Saturated:
			delay = "saturated"
		case bl.CountsOnly:
			delay = "-"
			countedBl = true
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f%%\t%s\t%s\n", bl.Name, formatMilli(bl.LimitMilli), 100*bl.ThrottledRatio, delay, how)
	}
	tw.Flush()
	if countedBl {
		b.WriteString("(- : a limit away from the knee is counted in one pass over the period sums, not replayed: exact throttled share, no delays)\n")
	}
}

// parallelism says how many CPUs the group ran on and how the replay used
// it: from the per-CPU counters where the samples carry them.
func parallelism(s Sampled) string {
	if s.CPUs == 0 {
		return fmt.Sprintf("no per-CPU counters: replayed on up to %s, a bound from the usage", plural(s.Cores, "CPU"))
	}
	how := "its CPU time on one CPU: the pool is replayed as one"
	if s.SliceModel {
		how = "the replay hands each CPU its 5 ms slices"
	}
	return fmt.Sprintf("ran on %s, %d at once within 10 ms, per-CPU counters; %s", plural(s.CPUs, "CPU"), s.CPUsAtOnce, how)
}

// phasesText says how many phases the evaluations are means over: all of
// Sampled.Phases, or by need two where they agreed (Evaluation.Phases).
func phasesText(a *Advice) string {
	few, all := 0, 0
	for _, e := range a.Evaluations {
		if e.Phases > 0 {
			few = e.Phases
		} else {
			all++
		}
	}
	if few == 0 {
		return fmt.Sprintf("%d phases", a.Sampled.Phases)
	}
	agreed := fmt.Sprintf("%d phases (0 and half a period, where they agreed within %.1f%% throttled and %.0f%% delay p99)", few, PhaseShareBound*100, PhaseDelayBound*100)
	if all == 0 {
		return agreed
	}
	return fmt.Sprintf("%s, or %d phases where they did not", agreed, a.Sampled.Phases)
}

// kneeRows picks the rows replayed with delays (band), once the rows the
// text showed by default: in each group of one period with or
// without burst, three rows below the first that meets the target at the
// upper end of its interval and two above (the last five if none does).
func kneeRows(a *Advice) []bool {
	show := make([]bool, len(a.Evaluations))
	type key struct {
		period int64
		burst  bool
	}
	groups := map[key][]int{}
	var order []key
	for i, e := range a.Evaluations {
		k := key{e.PeriodUsec, e.BurstMilli > 0}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	t := a.Recommendation.Target
	for _, k := range order {
		ix := groups[k]
		knee := len(ix) - 3
		for j, i := range ix {
			e := a.Evaluations[i]
			hi, dhi := e.ThrottledRatio, e.DelayP99Ms
			if e.ThrottledRatioRange != nil {
				hi = e.ThrottledRatioRange[1]
			}
			if e.DelayP99MsRange != nil {
				dhi = e.DelayP99MsRange[1]
			}
			if e.Saturated || e.DelayUnbounded {
				dhi = math.Inf(1)
			}
			if hi <= t.MaxThrottled && (t.MaxDelay <= 0 || dhi <= float64(t.MaxDelay)/1e6) {
				knee = j
				break
			}
		}
		for j := max(0, knee-3); j < min(len(ix), knee+3); j++ {
			show[ix[j]] = true
		}
	}
	return show
}
