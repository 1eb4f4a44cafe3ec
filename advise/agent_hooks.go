package advise

import (
	"time"

	"github.com/throttlelab/throttlelab/cfs"
)

// RecommendBlocks picks, among evaluations made elsewhere (the agent's
// rolling summary evaluates its own points through Evaluate), the smallest
// limit that meets t over the window, in every block (blocks[b][i] is
// evs[i] over block b alone; nil: the window alone) and with the use
// LevelSpread higher (higher[i] is evs[i] so; nil: not checked), without
// burst and with burst, at period: Advise's rule. t gets Advise's defaults
// (a 5% throttled share when it sets no bound).
func RecommendBlocks(evs []Evaluation, blocks [][]Evaluation, higher []Evaluation, t Target, period time.Duration) Recommendation {
	r, _ := recommend(evs, blockEvals(blocks), higher, NormalTarget(t), period)
	return r
}

// WindowOf is advise's Window for the agent's summary, with the
// recommendation (RecommendBlocks) made in the same pass: its blocks
// described (BlockDemand, oldest first), each block's evaluations of evs'
// points ([block][point], nil with fewer than two blocks), judged for
// stationarity at the limit the whole window would recommend, as Advise
// judges its own blocks.
func WindowOf(seconds float64, blocks []BlockDemand, blockEvs [][]Evaluation, evs, higher []Evaluation, t Target, period time.Duration) (Recommendation, Window) {
	t = NormalTarget(t)
	r, whole := recommend(evs, blockEvals(blockEvs), higher, t, period)
	return r, window(seconds, blocks, blockEvals(blockEvs), evs, t, whole, r, "")
}

// NormalTarget returns t with Advise's defaults applied: a 5% throttled share
// when t sets neither bound, no bound on the share when only a delay is set.
func NormalTarget(t Target) Target {
	if t.MaxThrottled <= 0 && t.MaxDelay <= 0 {
		t.MaxThrottled = 0.05
	}
	if t.MaxThrottled <= 0 {
		t.MaxThrottled = 1
	}
	t.MaxDelayMs = float64(t.MaxDelay) / 1e6
	return t
}

// EvaluateDelays is Evaluate that also returns, per point, the share of
// the work that waited no time at all (under 1 us) and the added delay (ms)
// at each of the quantiles qs: enough for the agent to merge the delays of
// many replays into one distribution.
func EvaluateDelays(d *Demand, points []Point, o Options, qs []float64) ([]Evaluation, []float64, [][]float64, error) {
	zero := make([]float64, len(points))
	at := make([][]float64, len(points))
	o.delays = func(i int, h *cfs.DelayHist) {
		zero[i] = h.ZeroShare()
		v := make([]float64, len(qs))
		for j, q := range qs {
			v[j] = h.Quantile(q) / 1e6
		}
		at[i] = v
	}
	evs, err := Evaluate(d, points, o)
	if err != nil {
		return nil, nil, nil, err
	}
	return evs, zero, at, nil
}

// Percentile is the nearest-rank percentile p (0-100) of v, as the coarse
// recommenders' baselines take it; v is sorted in place.
func Percentile(v []float64, p float64) float64 { return percentile(v, p) }

// MilliOf rounds cores up to whole millicores (at least 1m; 0 for none), as
// the baselines do.
func MilliOf(cores float64) int64 { return milliOf(cores) }
