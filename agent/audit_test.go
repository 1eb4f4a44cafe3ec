package agent

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
)

// TestSummaryAudit: a summary of demand sampled under 200m, with the
// kernel's nr_throttled noted, audits its advice at 200m: the kernel's
// count (the bandwidth rule burstsUnder follows) beside the replay's, an
// error that is their difference, and intervals widened by it; without a
// limit, no audit.
func TestSummaryAudit(t *testing.T) {
	at, usage, thr := burstsUnder(10 * time.Minute)
	s := NewSummary(testConfig())
	for i := range at {
		for _, c := range s.AddCounts(at[i], usage[i], thr[i]) {
			s.replayFold(c)
		}
		if i > 0 {
			s.NoteThrottled(at[i], thr[i]-thr[i-1])
		}
	}
	if c := s.Flush(); c != nil {
		s.replayFold(c)
	}
	targets := []advise.Target{{MaxThrottled: 0.05}}
	advs, err := s.AdviceFor(AdviceInput{Source: "test", LimitMilli: 200}, targets)
	if err != nil {
		t.Fatal(err)
	}
	a := advs[0].Audit
	if a == nil {
		t.Fatal("no audit at the container's own 200m")
	}
	t.Log(a)
	if a.ThrottledPeriods != thr[len(thr)-1] || a.Measured <= 0.1 || math.Abs(a.Error-(a.Predicted-a.Measured)) > 1e-12 {
		t.Errorf("audit %+v: want the %d throttled periods the kernel counted", a, thr[len(thr)-1])
	}
	if math.Abs(a.Error) > 0.1 {
		t.Errorf("the replay of the reconstructed demand at the limit it was sampled under is off by %+.3f", a.Error)
	}
	if !strings.Contains(a.String(), "200m") {
		t.Errorf("%q does not name the limit", a)
	}
	plain, err := s.AdviceFor(AdviceInput{Source: "test"}, targets)
	if err != nil {
		t.Fatal(err)
	}
	if plain[0].Audit != nil {
		t.Error("an audit without a limit")
	}
	for i, e := range advs[0].Evaluations {
		r, q := e.ThrottledRatioRange, plain[0].Evaluations[i].ThrottledRatioRange
		if r != nil && q != nil && (r[0] > q[0] || r[1] < q[1]) {
			t.Errorf("%s: audited interval %v does not contain %v", e.Point(), *r, *q)
		}
	}
}
