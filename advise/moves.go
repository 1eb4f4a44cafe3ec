package advise

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// MinSettledWindow is the shortest window in which demand that moves over
// 15 s (a checkpoint, a cache that warms, a client that changes pace) shows
// as a change across blocks: four swings of it.
const MinSettledWindow = 60 * time.Second

// maxLevelSpread caps how far the level replay moves the use.
const maxLevelSpread = 0.5

// levelZ is how many standard deviations of the next window's level the
// level replay covers on each side (about 95% each, so that with the
// blocks' spread at least 8 in 9 measured shares fall inside).
const levelZ = 2.0

// Moves is how the demand's level moved within the window: the lowest and
// highest mean use over consecutive stretches of Stretch (5 s, or one
// mean where the means are coarser), and the linear trend of the means.
// Moved says whether either goes beyond the noise of the means (a swing
// over 4.5 standard errors of a stretch's mean and over twice LevelSpread;
// a trend whose t statistic is over 4 and over LevelSpread a minute).
type Moves struct {
	LowCores, HighCores float64
	// Stretch is the span the swing is measured over.
	Stretch time.Duration
	// TrendPerMinute is the trend's change of use per minute, as a share
	// of the mean.
	TrendPerMinute float64
	Moved          bool
	// Low and High are the factors the level replay scales the use by:
	// where the mean use of a next window half as long as this one may
	// lie, from the data (see LevelOf), at least LevelSpread either way.
	Low, High float64
	// Spread is the larger of 1-Low and High-1.
	Spread float64
}

// levelStretch is the scale at which a program's level wanders: the swing
// and the residuals' spread are taken over stretches of it.
const levelStretch = 5 * time.Second

// movesOf is LevelOf over d's 1 s means.
func movesOf(d *Demand) Moves { return LevelOf(secondMeans(d), time.Second) }

// LevelOf is the one rule for how the demand's level moved and where the
// next window's level lies, from means: the mean use (cores) over
// consecutive windows of step each, oldest first (advise passes its 1 s
// means, the node agent its usage buckets, 15 s). Every path to advice
// calls it, so advise and the agent judge the same demand alike; with
// fewer than 10 means it gives the floor, LevelSpread either way, and says
// nothing moved.
//
// The level is estimated from the data, not set flat: the means are
// fitted with a linear trend; their residuals, averaged over stretches of
// 5 s (the scale at which a program's level wanders; one mean where they
// are coarser), give the standard deviation of a stretch's level, s5, and
// the window's mean level is known within levelZ x s5 / sqrt(n5) over its
// n5 stretches (the next window's own wander is what the blocks' spread
// shows). Where the trend is beyond that noise (its t statistic over 2,
// its error inflated by how the means wander together), the level is taken
// from the window's mean to where the trend leads by the middle of a next
// window half as long, with the trend's error carried that far.
func LevelOf(means []float64, step time.Duration) Moves {
	m := Moves{Spread: LevelSpread, Low: 1 - LevelSpread, High: 1 + LevelSpread, Stretch: max(step, levelStretch)}
	xs := means
	if len(xs) < 10 || step <= 0 {
		return m
	}
	g := max(1, int(levelStretch/step)) // means per stretch
	m.Stretch = time.Duration(g) * step
	perMinute := float64(time.Minute) / float64(step)
	n := float64(len(xs))
	mean, v := 0.0, 0.0
	for _, x := range xs {
		mean += x
	}
	mean /= n
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(v / (n - 1))
	if mean <= 0 {
		return m
	}
	m.LowCores, m.HighCores = math.Inf(1), math.Inf(-1)
	for i := 0; i+g <= len(xs); i += g {
		s := 0.0
		for _, x := range xs[i : i+g] {
			s += x
		}
		m.LowCores, m.HighCores = min(m.LowCores, s/float64(g)), max(m.HighCores, s/float64(g))
	}
	swing := m.HighCores - m.LowCores
	swung := swing > 4.5*sd/math.Sqrt(float64(g)) && swing/mean > 2*LevelSpread
	// Trend: least squares of the means on their step.
	var sxx, sxy float64
	for i, x := range xs {
		t := float64(i) - (n-1)/2
		sxx += t * t
		sxy += t * (x - mean)
	}
	b := sxy / sxx
	var res float64
	for i, x := range xs {
		e := x - mean - b*(float64(i)-(n-1)/2)
		res += e * e
	}
	se := math.Sqrt(res / (n - 2) / sxx)
	m.TrendPerMinute = b * perMinute / mean
	trended := se > 0 && math.Abs(b/se) > 4 && math.Abs(m.TrendPerMinute) > LevelSpread
	m.Moved = swung || trended
	// The residuals' stretch means.
	var r5 []float64
	for i := 0; i+g <= len(xs); i += g {
		s := 0.0
		for k, x := range xs[i : i+g] {
			s += x - mean - b*(float64(i+k)-(n-1)/2)
		}
		r5 = append(r5, s/float64(g))
	}
	if n5 := float64(len(r5)); n5 >= 3 {
		ss := 0.0
		for _, r := range r5 {
			ss += r * r
		}
		s5 := math.Sqrt(ss / (n5 - 1))
		// The means wander together over seconds: their trend's error is
		// inflated by how much more the stretch means spread than
		// independent means would.
		s1 := math.Sqrt(res / (n - 2))
		infl := 1.0
		if s1 > 0 {
			infl = max(1, s5*math.Sqrt(float64(g))/s1)
		}
		half := levelZ * s5 / math.Sqrt(n5) / mean
		lo, hi := 1.0, 1.0
		if bse := se * infl; bse > 0 && math.Abs(b/bse) > 2 && math.Abs(m.TrendPerMinute) > LevelSpread {
			// Where the trend leads by the middle of a next window half
			// as long as this one: 3/4 of a window past this one's middle.
			end := 1 + b*0.75*n/mean
			lo, hi = min(lo, end), max(hi, end)
			half = levelZ * math.Hypot(s5/math.Sqrt(n5), 0.75*n*bse) / mean
		}
		m.Low = max(min(lo-half, 1-LevelSpread), 1-maxLevelSpread)
		m.High = min(max(hi+half, 1+LevelSpread), 1+maxLevelSpread)
		m.Spread = max(1-m.Low, m.High-1)
	}
	return m
}

// Warnings says how the level moved and how long to sample (four times
// the window, at least MinSettledWindow, at most a day), for a window of
// span. A window of a day or more holds the daily cycle, whose moves its
// blocks judge: it gets no warning.
func (m Moves) Warnings(span time.Duration) []string {
	var out []string
	if m.Moved && span < 24*time.Hour {
		out = append(out, fmt.Sprintf("the demand's level moved within the window: %g s means from %.3f to %.3f cores, a trend of %+.0f%% a minute: the intervals and the recommendation take the use from %.0f%% lower to %.0f%% higher (the trend and the spread of the %g s means); sample at least %s to see whether it settles",
			m.Stretch.Seconds(), m.LowCores, m.HighCores, 100*m.TrendPerMinute, 100*(1-m.Low), 100*(m.High-1), m.Stretch.Seconds(), min(max(MinSettledWindow, 4*span), 24*time.Hour).Round(time.Second)))
	} else if span < MinSettledWindow {
		out = append(out, fmt.Sprintf("the window (%s) is too short to see demand that moves over 15 s or more (a checkpoint, a warming cache, a client that changes pace): sample %s or more",
			span.Round(time.Second), MinSettledWindow))
	}
	return out
}

// ClosedLoopWarning returns a warning when the group's use fell while its
// limit throttled it: over the 1 s windows of d (with nr_throttled thr at
// each sample), the mean use of the windows with throttling below that of
// the windows without. Work that waits for its own answers (a closed-loop
// client) asks for less while throttled, so the samples understate what an
// open-loop load would ask for; an open loop, throttled when its demand is
// high, shows the opposite.
func ClosedLoopWarning(d *Demand, thr []uint64) string {
	if len(thr) != len(d.At) || len(thr) == 0 || thr[len(thr)-1] == thr[0] {
		return ""
	}
	var useT, useN, secT, secN float64
	j := 0
	for k := 1; k < len(d.At); k++ {
		if dt := d.At[k] - d.At[j]; dt >= time.Second {
			u := float64(d.Usage[k]-d.Usage[j]) / float64(dt)
			if thr[k] > thr[j] {
				useT, secT = useT+u, secT+1
			} else {
				useN, secN = useN+u, secN+1
			}
			j = k
		}
	}
	if secT < 3 || secN < 3 {
		return ""
	}
	mt, mn := useT/secT, useN/secN
	if mt >= 0.95*mn {
		return ""
	}
	return fmt.Sprintf("the group's use fell while it was throttled (%.3f cores in the seconds with throttling, %.3f without): its load waits for its own answers (a closed-loop client) and asked for less under the limit, so the advice is a lower bound on what an open-loop load at the same rate would need",
		mt, mn)
}

// Startup is a start-up found at the beginning of a demand (StartupOf):
// its leading stretches of use, what they used, and what came after.
type Startup struct {
	// Stretches is how many leading means were the start-up.
	Stretches int
	// Low and High are the start-up's lowest and highest mean (cores),
	// Median the median of the means after it.
	Low, High, Median float64
	// StillFell is how far the use fell over the reference after it, as
	// a share of Median, where it fell more than LevelSpread (it may not
	// have settled); 0 otherwise.
	StillFell float64
	// NotOver is set when the leading stretches lie above the rest as a
	// start-up does, but the rest still falls: the use falls from the
	// start on (a start-up not over, or a load that fell), and no part of
	// it can be told apart as the start-up.
	NotOver bool
}

// MaxStartup is the longest start-up StartupOf looks for: a runtime's
// JIT and class loading, a cache that warms, settle within minutes, and a
// longer change at a window's start is the level's (LevelOf) or the
// blocks' to judge.
const MaxStartup = 10 * time.Minute

// StartupOf is the one rule for a start-up at the beginning of a demand (a
// runtime's JIT and class loading, a cache that warms), over means: the
// mean use (cores) over consecutive stretches of step, oldest first
// (advise passes 5 s means, the node agent its 15 s usage buckets). floor,
// if not nil, gives the least noise of one stretch's mean over the
// stretches [from, to) (advise: what its 1 s means give a 5 s mean).
//
// The start-up is at most kmax leading stretches (a third of them, at most
// MaxStartup), judged against the reference: the 2 x kmax stretches after
// those (what the program settled to, not a daily cycle hours later). It is
// the most leading stretches that each lie above the reference's median by
// more than the noise of a stretch's mean, and whose mean lies above that
// median by more than 2 x LevelSpread and by more than 3 standard errors
// of the difference where the leading stretches do not rise (a start-up
// falls; 4 for a single stretch, which cannot show it). The noise of a
// stretch's mean is the larger of floor and the reference's robust spread
// (1.4826 median absolute deviations, which a late burst does not
// inflate). A start-up is over unless the reference still falls (its
// Theil-Sen trend over its span more than LevelSpread of its median and
// more than 3 standard errors); where it does, the use falls from the
// start on (a start-up not over, or a load that fell: NotOver), and no
// part can be told apart to leave out.
// ok is false with fewer than 6 means or no start-up.
func StartupOf(means []float64, step time.Duration, floor func(from, to int) float64) (s Startup, ok bool) {
	n := len(means)
	if n < 6 || step <= 0 {
		return Startup{}, false
	}
	kmax := min(n/3, int(MaxStartup/step))
	if kmax < 1 {
		return Startup{}, false
	}
	ref := means[kmax:min(n, 3*kmax)]
	med := median(ref)
	dev := make([]float64, len(ref))
	for i, x := range ref {
		dev[i] = math.Abs(x - med)
	}
	sigma := max(1.4826*median(dev), 1e-3*med)
	if floor != nil {
		sigma = max(sigma, floor(kmax, min(n, 3*kmax)))
	}
	// The reference's change over its span: its Theil-Sen trend (the
	// median of the slopes between every two stretches; ref holds at most
	// 2 x MaxStartup of them, so the pairs stay few).
	var slopes []float64
	for i := range ref {
		for j := i + 1; j < len(ref); j++ {
			slopes = append(slopes, (ref[j]-ref[i])/float64(j-i))
		}
	}
	slope := median(slopes)
	drift := slope * float64(len(ref)-1)
	// The drift's standard error, as a least-squares slope's, from the
	// robust spread of the reference about its trend (at least floor).
	res := make([]float64, len(ref))
	for i, x := range ref {
		res[i] = x - slope*float64(i)
	}
	mr := median(res)
	for i := range res {
		res[i] = math.Abs(res[i] - mr)
	}
	m := float64(len(ref))
	resSigma := max(1.4826*median(res), 1e-3*med)
	if floor != nil {
		resSigma = max(resSigma, floor(kmax, min(n, 3*kmax)))
	}
	driftSE := resSigma * math.Sqrt(12/(m*m*m-m)) * (m - 1)
	falls := drift < -LevelSpread*med && drift < -3*driftSE
	k, falling := kmax, 0
	for ; k > 0; k-- {
		lead := 0.0
		out := true
		for _, x := range means[:k] {
			lead += x
			out = out && x > med+sigma
		}
		lead /= float64(k)
		jump := lead - med
		z := 4.0
		if k > 1 && means[k-1] <= means[0] {
			z = 3
		}
		se := sigma * math.Sqrt(1/float64(k)+1/float64(len(ref)))
		if out && jump > 2*LevelSpread*med && jump > z*se {
			if !falls {
				break
			}
			falling = max(falling, k)
		}
	}
	if k == 0 && falling == 0 {
		return Startup{}, false
	}
	if k == 0 {
		k = falling
		s.NotOver = true
	}
	s.Stretches, s.Low, s.High, s.Median = k, slices.Min(means[:k]), slices.Max(means[:k]), med
	if med > 0 && drift < -LevelSpread*med {
		s.StillFell = -drift / med
	}
	return s, true
}

// Describe says what the start-up used against the rest: "5 s means
// 0.104-0.116 cores, against a median of 0.089 after), and the use still
// fell ...", for stretches of step.
func (s Startup) Describe(step time.Duration) string {
	still := ""
	if s.StillFell > 0 {
		still = fmt.Sprintf(", and the use still fell %.0f%% after it (it may not have settled)", 100*s.StillFell)
	}
	return fmt.Sprintf("%g s means %.3f-%.3f cores, against a median of %.3f after)%s", step.Seconds(), s.Low, s.High, s.Median, still)
}

// startupOf finds a start-up at the beginning of d by StartupOf over its
// 5 s means, the noise of a 5 s mean at least what the reference's 1 s
// means give. It returns where the settled demand begins
// (0: no start-up) and a warning that says what was left out, whether the
// use still fell after it, and how long after a start to sample.
func startupOf(d *Demand) (cut time.Duration, note string) {
	const stretch = 5 * time.Second
	var means []float64
	var ends []int
	j := 0
	for k := 1; k < len(d.At); k++ {
		if d.At[k]-d.At[j] >= stretch {
			means = append(means, float64(d.Usage[k]-d.Usage[j])/float64(d.At[k]-d.At[j]))
			ends = append(ends, k)
			j = k
		}
	}
	seconds := secondMeans(d)
	s, ok := StartupOf(means, stretch, func(from, to int) float64 {
		if s1 := seconds[min(from*5, len(seconds)):min(to*5, len(seconds))]; len(s1) > 2 {
			return sd(s1) / math.Sqrt(5)
		}
		return 0
	})
	if !ok {
		return 0, ""
	}
	if s.NotOver {
		return 0, fmt.Sprintf("the use fell from the window's start on: %s a start-up not over (a JIT, class loading, a cache that warms) or a load that fell; the advice rests on all of it and errs high; for a program just started, begin sampling at least %s after its start, until this warning is gone",
			s.Falling(stretch), StartupWait(d.Duration()).Round(time.Second))
	}
	cut = d.At[ends[s.Stretches-1]] - d.At[0]
	rest := d.At[len(d.At)-1] - d.At[0] - cut
	wait := StartupWait(cut)
	if s.StillFell > 0 {
		wait = StartupWait(d.Duration()) // it may not have settled within the window
	}
	return cut, fmt.Sprintf("the first %s were a start-up (%s: left out of the advice, which rests on the %s after it; for a program just started, begin sampling at least %s after its start and sample %s or more",
		cut.Round(time.Second), s.Describe(stretch), rest.Round(time.Second), wait.Round(time.Second), MinSettledWindow)
}

// Falling says how the use fell, for a start-up NotOver with stretches of
// step: "5 s means 0.104-0.116 cores over the first 15s, a median of 0.089
// after, falling 16% more:".
func (s Startup) Falling(step time.Duration) string {
	return fmt.Sprintf("%g s means %.3f-%.3f cores over the first %s, a median of %.3f after, falling %.0f%% more:",
		step.Seconds(), s.Low, s.High, time.Duration(s.Stretches)*step, s.Median, 100*s.StillFell)
}

// StartupWait is how long after a start to begin sampling, for a start-up
// seen to last d (the whole window where the use still fell after the
// start-up): twice as long, at least MinSettledWindow.
func StartupWait(d time.Duration) time.Duration { return max(2*d, MinSettledWindow) }

// sd is the sample standard deviation of xs.
func sd(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return math.Sqrt(v / float64(len(xs)-1))
}

// median is the middle of xs (the mean of the two middle ones when even).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// afterStartup is d from its start-up's end on (startupOf), and the
// warning that says so; d itself where nothing was left out, with the
// warning of a start-up not over, or "".
func afterStartup(d *Demand) (*Demand, string) {
	cut, note := startupOf(d)
	if cut == 0 {
		return d, note // none, or one not over: nothing left out
	}
	i := 0
	for i < len(d.At) && d.At[i]-d.At[0] < cut {
		i++
	}
	c := *d
	c.At, c.Usage = make([]time.Duration, 0, len(d.At)-i), d.Usage[i:]
	for _, at := range d.At[i:] {
		c.At = append(c.At, at-d.At[i]) // blocks are cut from time 0
	}
	if d.PerCPU != nil {
		c.PerCPU = make([][]time.Duration, len(d.PerCPU))
		for k, u := range d.PerCPU {
			c.PerCPU[k] = u[i:]
		}
	}
	return &c, note
}
