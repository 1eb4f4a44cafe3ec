package report

import (
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/stats"
)

// TestWriteRows prints a reference and a limited config under one load:
// the figures under their headers, the ratio to the reference, the
// throttled share, and the interval line under a row that has one.
func TestWriteRows(t *testing.T) {
	rows := []record.Row{
		{Label: "ref (reference)", ConfigSummary: record.ConfigSummary{Config: "ref", Load: "load0", IsReference: true, Repeats: 2, P99Ms: 15, P99VsReference: 1}},
		{Label: "lim", ConfigSummary: record.ConfigSummary{Config: "lim", Load: "load0", Repeats: 2, P99Ms: 40, P99VsReference: 40.0 / 15, ThrottledPct: 15,
			P99MsCI95: &stats.Interval{35, 45}}},
	}
	var b strings.Builder
	WriteRows(&b, rows, false)
	for _, w := range []string{"load load0", "ref (reference)", "2.67x", "15.0%", "95% interval", "35.0-45.0"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("table has no %q:\n%s", w, b.String())
		}
	}
	if strings.Contains(b.String(), "\x1b[") {
		t.Errorf("colour without color set:\n%q", b.String())
	}
}
