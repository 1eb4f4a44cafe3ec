package advise

import (
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
)

// TestAuditAt: the audit's error is the replay's share less the kernel's,
// too few periods give none, and widenBy widens within 0..1.
func TestAuditAt(t *testing.T) {
	d := randTwo()
	p := Point{LimitMilli: 1100, Period: 100 * time.Millisecond}
	a, err := AuditAt(d, p, cfs.Stat{Periods: 300, ThrottledPeriods: 30}, Options{})
	if err != nil || a == nil {
		t.Fatalf("AuditAt = %v, %v", a, err)
	}
	if a.Measured != 0.1 || a.Error != a.Predicted-0.1 || a.Predicted < 0.3 {
		t.Errorf("audit %+v: want measured 0.1, predicted over 0.3 (randTwo at 1100m), error their difference", a)
	}
	if !strings.Contains(a.String(), "30 of 300") {
		t.Errorf("audit text %q names no counts", a.String())
	}
	if a, _ := AuditAt(d, p, cfs.Stat{Periods: 5, ThrottledPeriods: 5}, Options{}); a != nil {
		t.Errorf("an audit from 5 periods: %+v", a)
	}
	evs := []Evaluation{{ThrottledRatioRange: &Range{0.02, 0.5}}, {ThrottledRatioRange: &Range{0.6, 0.95}}}
	widenBy(evs, -0.1)
	if *evs[0].ThrottledRatioRange != (Range{0, 0.6}) || *evs[1].ThrottledRatioRange != (Range{0.5, 1}) {
		t.Errorf("widened: %v %v", *evs[0].ThrottledRatioRange, *evs[1].ThrottledRatioRange)
	}
}
