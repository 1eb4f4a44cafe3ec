package advise

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText writes the advice as a terminal report: the grid, the
// recommendation with its Kubernetes snippet and the burst how-to, and the
// coarse recommenders beside it.
func WriteText(w io.Writer, a *Advice) error {
	var b strings.Builder
	s := a.Sampled
	fmt.Fprintf(&b, "%s: %.1f s in %d samples, mean %.3f cores, highest 10 ms %.2f cores (replayed on up to %d CPUs)\n",
		s.Source, s.DurationSeconds, s.Samples, s.MeanCores, s.MaxCores10ms, s.Cores)
	if s.CPUStat.Periods > 0 {
		fmt.Fprintf(&b, "while sampled the group had %d periods, %d throttled (%.1f%%), %.3f s throttled, %d bursts\n",
			s.CPUStat.Periods, s.CPUStat.ThrottledPeriods, 100*float64(s.CPUStat.ThrottledPeriods)/float64(s.CPUStat.Periods),
			float64(s.CPUStat.ThrottledUsec)/1e6, s.CPUStat.Bursts)
	}
	for _, warn := range a.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", warn)
	}
	fmt.Fprintf(&b, "\nPredicted (means over %d phases of the period; WORST is the worst phase):\n", s.Phases)
	if s.WallClock {
		b.WriteString("wall-clock demand: work that finds the quota spent is lost (LOST s), not delayed\n")
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	lostHead := ""
	if s.WallClock {
		lostHead = "LOST s\t"
	}
	fmt.Fprintln(tw, "LIMIT\tBURST\tPERIOD\tTHROTTLED\tWORST\tTHR s\tBURSTS\t"+lostHead+"DELAY p50\tp99\tmax\t\t")
	for _, e := range a.Evaluations {
		burst := "-"
		if e.BurstMilli > 0 {
			burst = formatMilli(e.BurstMilli)
		}
		mark := ""
		if e.LimitMilli == a.Recommendation.LimitMilli && e.BurstMilli == 0 && e.PeriodUsec == a.Recommendation.PeriodUsec && a.Recommendation.Met {
			mark = "<"
		}
		if w := a.Recommendation.WithBurst; w != nil && e == *w {
			mark = "<"
		}
		lost := ""
		if s.WallClock {
			lost = fmt.Sprintf("%.2f\t", e.LostSeconds)
		}
		fmt.Fprintf(tw, "%s\t%s\t%dms\t%.1f%%\t%.1f%%\t%.2f\t%.0f\t%s%.1fms\t%.1fms\t%.1fms\t%s\t\n",
			formatMilli(e.LimitMilli), burst, e.PeriodUsec/1000, 100*e.ThrottledRatio, 100*e.ThrottledRatioWorst,
			e.ThrottledSeconds, e.Bursts, lost, e.DelayP50Ms, e.DelayP99Ms, e.DelayMaxMs, mark)
	}
	tw.Flush()

	r := a.Recommendation
	target := fmt.Sprintf("throttled periods <= %.1f%%", 100*r.Target.MaxThrottled)
	if r.Target.MaxThrottled >= 1 {
		target = "any throttling"
	}
	if r.Target.MaxDelay > 0 {
		target += fmt.Sprintf(", p99 added delay <= %s", r.Target.MaxDelay)
	}
	b.WriteString("\n")
	if !r.Met {
		fmt.Fprintf(&b, "No limit on the grid meets the target (%s): even %s gives %.1f%% throttled periods and %.1f ms p99 added delay.\n",
			target, formatMilli(r.LimitMilli), 100*r.ThrottledRatio, r.DelayP99Ms)
		b.WriteString("The curve above is the trade-off; with no limit at all the group is never throttled.\n")
	} else {
		lb := ""
		if r.LowerBound {
			lb = " (a lower bound, see below)"
		}
		fmt.Fprintf(&b, "Recommended limit for %s: %s%s\n  predicted %.1f%% throttled periods, p99 added delay %.1f ms\n",
			target, formatMilli(r.LimitMilli), lb, 100*r.ThrottledRatio, r.DelayP99Ms)
		b.WriteString("\n" + KubernetesSnippet(r.Evaluation))
	}
	if wb := r.WithBurst; wb != nil {
		fmt.Fprintf(&b, "\nWith CPU burst: limit %s with a burst of %s (%d us) meets it too: %.1f%% throttled, p99 added delay %.1f ms.\n",
			formatMilli(wb.LimitMilli), formatMilli(wb.BurstMilli), wb.BurstUsec, 100*wb.ThrottledRatio, wb.DelayP99Ms)
		b.WriteString(BurstHowTo(*wb) + "\n")
	}
	if r.LowerBound {
		fmt.Fprintf(&b, "\nThe group was throttled while sampled (%d of %d periods): the demand it had above its limit was never seen.\nThe advice is a lower bound: sample it without a limit (or a higher one) to know.\n",
			s.CPUStat.ThrottledPeriods, s.CPUStat.Periods)
	}

	b.WriteString("\nWhat coarse recommenders would set from the same samples, and what it would cause:\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RECOMMENDER\tLIMIT\tTHROTTLED\tDELAY p99\tHOW")
	for _, bl := range a.Baselines {
		if bl.Evaluation == nil {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t%s: missing, %s\n", bl.Name, bl.How, bl.Missing)
			continue
		}
		how := bl.How
		if bl.Windows > 0 {
			how += fmt.Sprintf(" (over %d windows stepping 1 s)", bl.Windows)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f%%\t%.1fms\t%s\n", bl.Name, formatMilli(bl.LimitMilli), 100*bl.ThrottledRatio, bl.DelayP99Ms, how)
	}
	tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}
