package advise

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// WriteText writes the advice as a terminal report sized for a screen: the
// answer first (Answer) and the knee (KneeText), the recommendation's Kubernetes snippet and the
// burst how-to, the warnings, the grid rows around the knee, and the coarse
// recommenders beside it. WriteTextGrid writes every row.
func WriteText(w io.Writer, a *Advice) error { return writeText(w, a, false) }

// WriteTextGrid is WriteText with every row of the grid.
func WriteTextGrid(w io.Writer, a *Advice) error { return writeText(w, a, true) }

// Answer is the advice in one sentence, with its numbers and interval,
// written from the advice's own fields.
func Answer(a *Advice) string {
	r := a.Recommendation
	win := fmt.Sprintf("the %s window (%d blocks of %s)", fmtSeconds(a.Window.Seconds), len(a.Window.Blocks), fmtSeconds(a.Window.BlockSeconds))
	if len(a.Window.Blocks) < 2 {
		win = fmt.Sprintf("the %s window (too short for blocks)", fmtSeconds(a.Window.Seconds))
	}
	if !r.Met {
		return fmt.Sprintf("No limit up to %s meets the target (%s) in every block of %s: it would throttle %s of periods; leave the group unlimited or accept more throttling.",
			formatMilli(r.LimitMilli), targetText(r.Target), win, ShareRange(r.ThrottledRatio, r.ThrottledRatioRange))
	}
	lb := ""
	if r.LowerBound {
		lb = " at least"
	}
	where := "in every block"
	if len(a.Window.Blocks) < 2 {
		where = "over the window"
	} else if a.Spike != nil {
		where = "in every block, its one spike counted once over the window (see the warning)"
	}
	return fmt.Sprintf("Set the CPU limit to%s %s: over %s, with %.3f cores used on average, it is predicted to throttle %s of periods with %s p99 added delay, within the target (%s) %s.",
		lb, formatMilli(r.LimitMilli), win, a.Sampled.MeanCores, ShareRange(r.ThrottledRatio, r.ThrottledRatioRange), delayText(r.Evaluation), targetText(r.Target), where)
}

// ShareRange writes a share and its interval: 1.1% [0.0-3.4%].
func ShareRange(x float64, r *Range) string {
	if r == nil {
		return fmt.Sprintf("%.1f%%", 100*x)
	}
	return fmt.Sprintf("%.1f%% [%.1f-%.1f%%]", 100*x, 100*r[0], 100*r[1])
}

// msRange writes a delay and its interval: 2.0 ms [0.0-4.1].
// delayText is e's p99 delay with its interval, or what stands for it
// where work waits without end.
func delayText(e Evaluation) string {
	switch {
	case e.Saturated:
		return "none (" + saturatedText + ")"
	case e.DelayUnbounded:
		return fmt.Sprintf("%.1f ms [no upper end: %s in a block or with more use]", e.DelayP99Ms, saturatedText)
	}
	return msRange(e.DelayP99Ms, e.DelayP99MsRange)
}

// saturatedText says why a point has no delays.
const saturatedText = "queue grows without end: limit below the mean use"

func msRange(x float64, r *Range) string {
	if r == nil {
		return fmt.Sprintf("%.1f ms", x)
	}
	return fmt.Sprintf("%.1f ms [%.1f-%.1f]", x, r[0], r[1])
}

func targetText(t Target) string {
	s := fmt.Sprintf("throttled periods <= %.1f%%", 100*t.MaxThrottled)
	if t.MaxThrottled >= 1 {
		s = "any throttling"
	}
	if t.MaxDelay > 0 {
		s += fmt.Sprintf(", p99 added delay <= %s", t.MaxDelay)
	}
	return s
}

// kneeRows picks the rows to show: in each group of one period with or
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

func writeText(w io.Writer, a *Advice, all bool) error {
	var b strings.Builder
	s := a.Sampled
	b.WriteString(Answer(a) + "\n")
	if k := KneeText(a); k != "" {
		b.WriteString(k + "\n")
	}
	if a.Recommendation.Met {
		b.WriteString("\n" + KubernetesSnippet(a.Recommendation.Evaluation))
	}
	if wb := a.Recommendation.WithBurst; wb != nil {
		fmt.Fprintf(&b, "\nWith CPU burst: limit %s with a burst of %s (%d us) meets it too: %s throttled, p99 added delay %s.\n",
			formatMilli(wb.LimitMilli), formatMilli(wb.BurstMilli), wb.BurstUsec, ShareRange(wb.ThrottledRatio, wb.ThrottledRatioRange), delayText(*wb))
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
	for _, warn := range a.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", warn)
	}
	if a.Window.Stationary && a.Window.Seconds < 600 {
		fmt.Fprintf(&b, "note: the advice rests on %s of samples; changes slower than that (GC cycles, checkpoints, daily load) are not in it: sample 10m or more (hours for daily cycles) for a service\n", fmtSeconds(a.Window.Seconds))
	}
	fmt.Fprintf(&b, "\nPredicted (means over %s of the period; [low-high] over the %d blocks and at least %.0f%% less or more use; WORST is the worst phase):\n", phasesText(a), len(a.Window.Blocks), LevelSpread*100)
	if s.WallClock {
		b.WriteString("wall-clock demand: work that finds the quota spent is lost (LOST s), not delayed\n")
	}
	show := kneeRows(a)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	lostHead := ""
	if s.WallClock {
		lostHead = "LOST s\t"
	}
	fmt.Fprintln(tw, "LIMIT\tBURST\tPERIOD\tTHROTTLED\t[low-high]\tWORST\tTHR s\tBURSTS\t"+lostHead+"DELAY p50\tp99\t[low-high]\tmax\t\t")
	shown, counted, sat, unbounded := 0, 0, 0, 0
	for i, e := range a.Evaluations {
		if !all && !show[i] {
			continue
		}
		shown++
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
			del = fmt.Sprintf("[%.1f-%.1f]", r[0], r[1])
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
		fmt.Fprintf(tw, "%s\t%s\t%dms\t%.1f%%\t%s\t%.1f%%\t%.2f\t%.0f\t%s%.1fms\t%.1fms\t%s\t%.1fms\t%s\t\n",
			formatMilli(e.LimitMilli), burst, e.PeriodUsec/1000, 100*e.ThrottledRatio, thr, 100*e.ThrottledRatioWorst,
			e.ThrottledSeconds, e.Bursts, lost, e.DelayP50Ms, e.DelayP99Ms, del, e.DelayMaxMs, mark)
	}
	tw.Flush()
	if shown < len(a.Evaluations) {
		fmt.Fprintf(&b, "(%d of %d rows, around the knee)\n", shown, len(a.Evaluations))
	}
	if counted > 0 {
		fmt.Fprintf(&b, "(- : %d rows counted in one pass over the period sums, not replayed: exact throttled counts; throttled time, bursts and delays not given)\n", counted)
	}
	if sat > 0 || unbounded > 0 {
		fmt.Fprintf(&b, "(* : %s, over the window (saturated, no delays: counted, not replayed) or in a block or with %.0f%% more use (no upper end))\n", saturatedText, LevelSpread*100)
	}

	r := a.Recommendation
	switch {
	case r.LowerBound:
		fmt.Fprintf(&b, "\nThe group was throttled while sampled (%d of %d periods): the demand it had above its limit was never seen.\nThe advice is a lower bound: sample it without a limit (or a higher one) to know.\n",
			s.CPUStat.ThrottledPeriods, s.CPUStat.Periods)
	case r.Reconstructed:
		fmt.Fprintf(&b, "\nThe group was throttled while sampled (%d of %d periods): its limit spread its bursts over periods.\nThe demand was rebuilt from the throttling counters as the most bursty they allow: the advice errs high, not low.\n",
			s.CPUStat.ThrottledPeriods, s.CPUStat.Periods)
	}

	b.WriteString("\nWhat coarse recommenders would set from the same samples, and what it would cause:\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RECOMMENDER\tLIMIT\tTHROTTLED\tDELAY p99\tHOW")
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
		delay := fmt.Sprintf("%.1fms", bl.DelayP99Ms)
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
	_, err := io.WriteString(w, b.String())
	return err
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

// plural is n and the noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
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
