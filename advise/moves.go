package advise

import (
	"fmt"
	"math"
	"time"
)

// MinSettledWindow is the shortest window in which demand that moves over
// 15 s (a checkpoint, a cache that warms, a client that changes pace) shows
// as a change across blocks: four swings of it.
const MinSettledWindow = 60 * time.Second

// maxLevelSpread caps how far the level replay moves the use for demand
// whose level moved within the window.
const maxLevelSpread = 0.2

// Moves is how the demand's level moved within the window: the lowest and
// highest mean use over consecutive 5 s windows, and the linear trend of
// its 1 s means. Moved says whether either goes beyond the noise of the
// 1 s means (a swing over 4.5 standard errors of a 5 s mean and over twice
// LevelSpread; a trend whose t statistic is over 4).
type Moves struct {
	LowCores, HighCores float64
	// TrendPerMinute is the trend's change of use per minute, as a share
	// of the mean.
	TrendPerMinute float64
	Moved          bool
	// Spread is the share by which the level replay moves the use for
	// this window: LevelSpread, or half the swing when it moved (up to
	// maxLevelSpread).
	Spread float64
}

// movesOf measures how d's level moved.
func movesOf(d *Demand) Moves {
	m := Moves{Spread: LevelSpread}
	xs := secondMeans(d)
	if len(xs) < 10 {
		return m
	}
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
	for i := 0; i+5 <= len(xs); i += 5 {
		s := 0.0
		for _, x := range xs[i : i+5] {
			s += x
		}
		m.LowCores, m.HighCores = min(m.LowCores, s/5), max(m.HighCores, s/5)
	}
	swing := m.HighCores - m.LowCores
	swung := len(xs) >= 10 && swing > 4.5*sd/math.Sqrt(5) && swing/mean > 2*LevelSpread
	// Trend: least squares of the 1 s means on their second.
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
	trended := se > 0 && math.Abs(b/se) > 4 && math.Abs(b*60/mean) > LevelSpread
	m.TrendPerMinute = b * 60 / mean
	if swung || trended {
		m.Moved = true
		m.Spread = min(max(LevelSpread, swing/mean/2), maxLevelSpread)
	}
	return m
}

// movesWarnings says how the level moved and how long to sample, for a
// window of span.
func movesWarnings(m Moves, span time.Duration) []string {
	var out []string
	if m.Moved {
		out = append(out, fmt.Sprintf("the demand's level moved within the window: 5 s means from %.3f to %.3f cores, a trend of %+.0f%% a minute: the intervals and the recommendation take the use %.0f%% lower and higher (not %.0f%%); sample at least %s to see whether it settles",
			m.LowCores, m.HighCores, 100*m.TrendPerMinute, 100*m.Spread, 100*LevelSpread, max(MinSettledWindow, 4*span).Round(time.Second)))
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
