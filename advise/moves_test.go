package advise

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// levels is 10 ms samples of use around each level in turn, for per each.
func levels(seed uint64, per time.Duration, lv ...float64) (*Demand, []uint64) {
	r := rand.New(rand.NewPCG(seed, 1))
	d := &Demand{}
	var u time.Duration
	n := int(per / (10 * time.Millisecond))
	for k, l := range lv {
		for i := 0; i < n; i++ {
			if k > 0 || i > 0 {
				u += time.Duration(float64(10*time.Millisecond) * l * 2 * r.Float64())
			}
			d.At = append(d.At, time.Duration(k*n+i)*10*time.Millisecond)
			d.Usage = append(d.Usage, u)
		}
	}
	return d, nil
}

// TestMoves: a steady level over 60 s has not moved and gets no warning; a
// step from 0.27 to 0.34 cores (the PostgreSQL case of issue 39) has,
// widens the level replay to about half its swing and says how long to
// sample; a steady 18 s window is told it is too short.
func TestMoves(t *testing.T) {
	steady, _ := levels(1, 61*time.Second, 0.3)
	if m := movesOf(steady); m.Moved || math.Abs(m.Spread-LevelSpread) > 1e-9 || len(m.Warnings(steady.Duration())) != 0 {
		t.Errorf("steady demand: %+v, warnings %q", m, m.Warnings(steady.Duration()))
	}
	step, _ := levels(2, 15*time.Second, 0.27, 0.27, 0.34, 0.34)
	m := movesOf(step)
	t.Logf("step: %+v", m)
	if !m.Moved || m.Spread < 0.08 || m.Spread > maxLevelSpread {
		t.Errorf("a step from 0.27 to 0.34 cores: %+v, want moved with a spread of about half the swing", m)
	}
	if w := m.Warnings(step.Duration()); len(w) != 1 || !strings.Contains(w[0], "sample at least 4m0s") {
		t.Errorf("warnings %q: want one saying to sample 4 minutes", w)
	}
	if w := m.Warnings(7 * time.Hour); len(w) != 1 || !strings.Contains(w[0], "sample at least 24h0m0s") {
		t.Errorf("moved over 7 hours: warnings %q: want one saying to sample a day", w)
	}
	if w := m.Warnings(24 * time.Hour); len(w) != 0 {
		t.Errorf("moved over a day: warnings %q: want none (the blocks judge a daily cycle)", w)
	}
	short, _ := levels(3, 18*time.Second, 0.3)
	if w := movesOf(short).Warnings(short.Duration()); len(w) != 1 || !strings.Contains(w[0], "too short") {
		t.Errorf("an 18 s window: warnings %q", w)
	}
}

// TestClosedLoopWarning: use that falls in the seconds the group was
// throttled is named a closed loop and a lower bound; use that rises then
// (an open loop throttled at its peaks) is not.
func TestClosedLoopWarning(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lv     []float64
		closed bool
	}{
		{"closed", []float64{0.5, 0.3, 0.5, 0.3, 0.5, 0.3, 0.5, 0.3, 0.5, 0.3}, true},
		{"open", []float64{0.3, 0.5, 0.3, 0.5, 0.3, 0.5, 0.3, 0.5, 0.3, 0.5}, false},
	} {
		d, _ := levels(4, time.Second, tc.lv...)
		// Throttled in the odd seconds.
		thr := make([]uint64, len(d.At))
		var n uint64
		for i := range d.At {
			if s := int(d.At[i] / time.Second); s%2 == 1 && i%100 != 0 && i%10 == 0 {
				n++
			}
			thr[i] = n
		}
		w := ClosedLoopWarning(d, thr)
		if (w != "") != tc.closed || (tc.closed && !strings.Contains(w, "lower bound")) {
			t.Errorf("%s: warning %q", tc.name, w)
		}
	}
}

// TestStartupOf: 15 s well above a level that then stays flat is a
// start-up over (three stretches, nothing still falling); the same start
// followed by a fall that goes on (a warm-up not over, or a load that
// fell) is NotOver, with how far the use still fell; flat means have none.
func TestStartupOf(t *testing.T) {
	over := []float64{0.40, 0.38, 0.36, 0.25, 0.251, 0.249, 0.25, 0.252, 0.248, 0.25, 0.251, 0.249}
	s, ok := StartupOf(over, 5*time.Second, nil)
	if !ok || s.NotOver || s.Stretches != 3 || s.StillFell != 0 {
		t.Errorf("a start-up over: %+v, %v", s, ok)
	}
	going := []float64{0.40, 0.38, 0.36, 0.30, 0.29, 0.28, 0.27, 0.26, 0.25, 0.24, 0.23, 0.22}
	s, ok = StartupOf(going, 5*time.Second, nil)
	if !ok || !s.NotOver || s.StillFell < 0.2 {
		t.Errorf("a fall that goes on: %+v, %v", s, ok)
	}
	if s, ok := StartupOf([]float64{0.25, 0.251, 0.249, 0.25, 0.252, 0.248, 0.25, 0.251, 0.249}, 5*time.Second, nil); ok {
		t.Errorf("flat means: %+v", s)
	}
}
