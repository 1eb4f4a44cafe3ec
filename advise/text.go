package advise

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// BriefLines is the most lines WriteText writes: an answer read in ten
// seconds (the answer, why, the burst alternative, the baselines, the
// warnings). WriteTextGrid writes everything behind it.
const BriefLines = 15

// WriteText writes the advice as an answer read in ten seconds, in at most
// BriefLines lines: the answer; why this limit (the basis it was chosen on,
// the limit below it and what that one fails) and where it sits against the
// knee; the burst alternative; the coarse recommenders in one line; the
// samples; the warnings. WriteTextGrid writes the grid and the rest.
func WriteText(w io.Writer, a *Advice) error { return WriteBrief(w, a, "") }

// WriteBrief is WriteText ending with the line more (where to find the
// rest, in the caller's words), within the same BriefLines. Warnings that
// do not fit are counted on one line.
func WriteBrief(w io.Writer, a *Advice, more string) error {
	lines := briefHead(a)
	tail := briefWarnings(a)
	room := BriefLines - len(lines)
	if more != "" {
		room--
	}
	if len(tail) > room {
		n := len(tail) - (room - 1)
		tail = append(tail[:room-1], fmt.Sprintf("(%s more, with the grid)", plural(n, "warning")))
	}
	lines = append(lines, tail...)
	if more != "" {
		lines = append(lines, more)
	}
	_, err := io.WriteString(w, strings.Join(lines, "\n")+"\n")
	return err
}

// briefHead is the brief's lines before the warnings: at most ten.
func briefHead(a *Advice) []string {
	r := a.Recommendation
	var out []string
	if r.Met {
		lb := ""
		if r.LowerBound {
			lb = "at least "
		}
		out = append(out, fmt.Sprintf("Set the CPU limit to %s%s (resources.limits.cpu: %s): %s of periods throttled, p99 added delay %s.",
			lb, formatMilli(r.LimitMilli), formatMilli(r.LimitMilli), ShareRange(r.ThrottledRatio, r.ThrottledRatioRange), delayText(a, r.Evaluation)))
	} else {
		out = append(out, Answer(a))
	}
	out = append(out, whyLines(a)...)
	if wb := r.WithBurst; wb != nil {
		out = append(out, fmt.Sprintf("Or with CPU burst: limit %s and a burst of %s (%d us) meet it too: %s throttled, p99 added delay %s; Kubernetes has no burst field: set cpu.max.burst on the container's group.",
			formatMilli(wb.LimitMilli), formatMilli(wb.BurstMilli), wb.BurstUsec, ShareRange(wb.ThrottledRatio, wb.ThrottledRatioRange), delayText(a, *wb)))
	}
	if bl := baselinesLine(a.Baselines); bl != "" {
		out = append(out, bl)
	}
	out = append(out, samplesLine(a))
	if rl := RuntimeLine(a); rl != "" {
		out = append(out, rl)
	}
	s := a.Sampled
	switch {
	case a.Audit != nil:
		out = append(out, a.Audit.String())
	case s.CPUStat.Periods > 0:
		out = append(out, fmt.Sprintf("While sampled the group had %d periods, %d throttled (%.1f%%), %.3f s throttled.",
			s.CPUStat.Periods, s.CPUStat.ThrottledPeriods, 100*float64(s.CPUStat.ThrottledPeriods)/float64(s.CPUStat.Periods), float64(s.CPUStat.ThrottledUsec)/1e6))
	}
	switch {
	case r.LowerBound:
		out = append(out, fmt.Sprintf("A lower bound: the group was throttled while sampled (%d of %d periods), so the demand it had above its limit was never seen: sample it without a limit (or a higher one) to know.",
			s.CPUStat.ThrottledPeriods, s.CPUStat.Periods))
	case r.Reconstructed:
		out = append(out, fmt.Sprintf("Rebuilt: the group was throttled while sampled (%d of %d periods); its demand was rebuilt from the throttling counters as the most bursty they allow, so the advice errs high, not low.",
			s.CPUStat.ThrottledPeriods, s.CPUStat.Periods))
	}
	return out
}

// briefWarnings are the warnings and the note on a short window, a line
// each.
func briefWarnings(a *Advice) []string {
	var out []string
	for _, warn := range a.Warnings {
		out = append(out, "warning: "+warn)
	}
	if n := shortWindowNote(a); n != "" {
		out = append(out, n)
	}
	return out
}

// shortWindowNote says what a stationary window shorter than 10 minutes
// cannot show ("" otherwise).
func shortWindowNote(a *Advice) string {
	if !a.Window.Stationary || a.Window.Seconds >= 600 {
		return ""
	}
	return fmt.Sprintf("note: the advice rests on %s of samples; changes slower than that (GC cycles, checkpoints, daily load) are not in it: sample 10m or more (hours for daily cycles) for a service", fmtSeconds(a.Window.Seconds))
}

// whyLines say why the recommendation is this limit: the rule it meets,
// the limit below it on the grid and what that one fails, and where it
// sits against the knee at the target's share (two lines).
func whyLines(a *Advice) []string {
	r := a.Recommendation
	t := r.Target
	rows := kneeLadder(a.Evaluations, time.Duration(r.PeriodUsec)*time.Microsecond)
	if !r.Met {
		return []string{fmt.Sprintf("Why none: %s, the highest limit evaluated, %s.", formatMilli(r.LimitMilli), fails(r.Evaluation, t))}
	}
	var below *Evaluation
	for i := range rows {
		if rows[i].LimitMilli < r.LimitMilli {
			below = &rows[i]
		}
	}
	why := fmt.Sprintf("Why %s: the target is %s, and %s is the lowest limit on the grid that %s", formatMilli(r.LimitMilli), targetText(t), formatMilli(r.LimitMilli), r.Basis)
	if below != nil {
		why += fmt.Sprintf("; the one below it, %s, %s.", formatMilli(below.LimitMilli), fails(*below, t))
	} else {
		why += " (the lowest limit evaluated)."
	}
	out := []string{why}
	if k := kneeLine(a, below); k != "" {
		out = append(out, k)
	}
	return out
}

// fails says what e fails of t, by the ends of its intervals: the
// throttled share, else the delay, else a block or more use (which the
// intervals span but the rule checks one by one). Delays are named, not
// given: a point only counted has none.
func fails(e Evaluation, t Target) string {
	if e.ThrottledRatio > t.MaxThrottled {
		return "throttles " + ShareRange(e.ThrottledRatio, e.ThrottledRatioRange) + " of periods"
	}
	if _, hi := shareEnds(e); hi > t.MaxThrottled {
		return "throttles " + ShareRange(e.ThrottledRatio, e.ThrottledRatioRange) + " of periods, over the target at its interval's high end"
	}
	if t.MaxDelay > 0 {
		return fmt.Sprintf("adds more than the p99 delay of %s", t.MaxDelay)
	}
	return "misses the target in a block or with more use"
}

// kneeLine places the recommendation against the knee at the target's
// share: within its range of limits, or above it and why (the grid's step
// from below, or what the limits in the range fail besides the share).
func kneeLine(a *Advice, below *Evaluation) string {
	r := a.Recommendation
	var k *KneeRange
	for i := range a.Knee {
		if a.Knee[i].Target {
			k = &a.Knee[i]
		}
	}
	if k == nil {
		return ""
	}
	share := fmtShare(k.Share)
	step := ""
	if k.StepMilli > 0 {
		step = fmt.Sprintf(", limits evaluated %s apart there", formatMilli(k.StepMilli))
	}
	switch {
	case k.LowMilli == 0 || k.NoUpperEnd:
		return fmt.Sprintf("The knee at %s throttled is %s: the interval's high end stays above %s at every limit evaluated (up to %s), so the answer comes from the rule above, not from the knee.",
			share, k.Limits(), share, formatMilli(k.UpToMilli))
	case r.LimitMilli > k.HighMilli && below != nil && below.LimitMilli < k.HighMilli:
		return fmt.Sprintf("It sits above the knee (%s throttled at %s%s) because the grid steps from %s to %s and the answer is one of the grid's limits.",
			share, k.Limits(), step, formatMilli(below.LimitMilli), formatMilli(r.LimitMilli))
	case r.LimitMilli > k.HighMilli:
		return fmt.Sprintf("It sits above the knee (%s throttled at %s%s): the limits from %s to %s meet the throttled share but not the rest of the target.",
			share, k.Limits(), step, formatMilli(k.HighMilli), formatMilli(below.LimitMilli))
	case r.LimitMilli < k.LowMilli:
		return fmt.Sprintf("It sits below the knee (%s throttled at %s%s): the knee reads the intervals' ends, the answer the rule above.", share, k.Limits(), step)
	}
	return fmt.Sprintf("It sits within the knee (%s throttled at %s%s: from where the interval's low end crosses %s to where its high end does).", share, k.Limits(), step, share)
}

// baselinesLine is the coarse recommenders in one line: each one's limit
// and the throttled share it would cause, the missing ones by reason.
func baselinesLine(bls []Baseline) string {
	var have []string
	var order []string
	missing := map[string][]string{}
	for _, bl := range bls {
		if bl.Evaluation == nil {
			if _, ok := missing[bl.Missing]; !ok {
				order = append(order, bl.Missing)
			}
			missing[bl.Missing] = append(missing[bl.Missing], bl.Name)
			continue
		}
		have = append(have, fmt.Sprintf("%s %s throttles %.1f%%", bl.Name, formatMilli(bl.LimitMilli), 100*bl.ThrottledRatio))
	}
	for _, m := range order {
		have = append(have, fmt.Sprintf("%s missing (%s)", strings.Join(missing[m], ", "), m))
	}
	if len(have) == 0 {
		return ""
	}
	return "Coarse recommenders on the same samples: " + strings.Join(have, "; ") + "."
}

// samplesLine is what the advice rests on, in one line.
func samplesLine(a *Advice) string {
	s := a.Sampled
	cpus := "no per-CPU counters"
	if s.CPUs > 0 {
		cpus = "ran on " + plural(s.CPUs, "CPU")
	}
	blocks := fmt.Sprintf("%d blocks of %s", len(a.Window.Blocks), fmtSeconds(a.Window.BlockSeconds))
	if len(a.Window.Blocks) < 2 {
		blocks = "too short for blocks"
	}
	return fmt.Sprintf("Samples: %s, %.1f s in %d samples (%s), mean %.3f cores, highest 10 ms %.2f cores, %s.",
		s.Source, s.DurationSeconds, s.Samples, blocks, s.MeanCores, s.MaxCores10ms, cpus)
}

// Delays the window cannot show. A block's replay records work still
// waiting at the block's end as delayed until then, so no block's delay is
// longer than the block; a longer end of an interval comes from a replay
// of the whole window with more use (or the slice bound), past what any
// block's samples show. Such an end is written >X, X the block's length
// (the window's for a value over the whole window), never as the number
// of the model's tail.

// delaySpans are the longest delays (ms) the samples can show: over the
// window (a value over the whole window) and in a block (an interval's end).
func delaySpans(a *Advice) (windowMs, blockMs float64) {
	windowMs = a.Window.Seconds * 1000
	if windowMs <= 0 {
		windowMs = a.Sampled.DurationSeconds * 1000
	}
	blockMs = windowMs
	if len(a.Window.Blocks) > 1 && a.Window.BlockSeconds > 0 {
		blockMs = a.Window.BlockSeconds * 1000
	}
	return windowMs, blockMs
}

// msText writes a delay of ms, or >span where it is longer than span (ms;
// 0: no bound).
func msText(ms, span float64) string {
	if span > 0 && ms > span {
		return ">" + fmtSeconds(span/1000)
	}
	return fmt.Sprintf("%.1f", ms)
}

// delayText is e's p99 delay with its interval, or what stands for it
// where work waits without end; an end the window cannot show as >X.
func delayText(a *Advice, e Evaluation) string {
	switch {
	case e.Saturated:
		return "none (" + saturatedText + ")"
	case e.DelayUnbounded:
		return fmt.Sprintf("%s ms [no upper end: %s in a block or with more use]", msText(e.DelayP99Ms, 0), saturatedText)
	}
	win, blk := delaySpans(a)
	return msRange(e.DelayP99Ms, e.DelayP99MsRange, win, blk)
}

// msRange writes a delay and its interval, 2.0 ms [0.0-4.1], with a value
// longer than win and an end longer than blk (ms) as >X.
func msRange(x float64, r *Range, win, blk float64) string {
	if r == nil {
		return msText(x, win) + " ms"
	}
	return fmt.Sprintf("%s ms [%s-%s]", msText(x, win), msText(r[0], blk), msText(r[1], blk))
}

// saturatedText says why a point has no delays.
const saturatedText = "queue grows without end: limit below the mean use"

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
		lb, formatMilli(r.LimitMilli), win, a.Sampled.MeanCores, ShareRange(r.ThrottledRatio, r.ThrottledRatioRange), delayText(a, r.Evaluation), targetText(r.Target), where)
}

// ShareRange writes a share and its interval: 1.1% [0.0-3.4%].
func ShareRange(x float64, r *Range) string {
	if r == nil {
		return fmt.Sprintf("%.1f%%", 100*x)
	}
	return fmt.Sprintf("%.1f%% [%.1f-%.1f%%]", 100*x, 100*r[0], 100*r[1])
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

// plural is n and the noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
