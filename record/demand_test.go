package record

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReadRecordedReconstructs: a recorded run that was throttled (the
// report's fixture: the limited config at 1 CPU) is read with its
// throttled.csv, and the demand rebuilt, with a warning; the unlimited
// config's is left as used.
func TestReadRecordedReconstructs(t *testing.T) {
	dir := filepath.Join("..", "report", "testdata", "limits")
	lim, err := ReadDemand(dir, "limited", "limited-0")
	if err != nil {
		t.Fatal(err)
	}
	if lim.CPUStat.ThrottledPeriods == 0 {
		t.Fatalf("the fixture's limited run was not throttled: %+v", lim.CPUStat)
	}
	if lim.Demand.Moved == 0 || !strings.Contains(strings.Join(lim.Demand.Warnings, " "), "reconstructed from its throttling counters") {
		t.Errorf("moved %s, warnings %q: want the throttled run rebuilt", lim.Demand.Moved, lim.Demand.Warnings)
	}
	unl, err := ReadDemand(dir, "unlimited", "unlimited-0")
	if err != nil {
		t.Fatal(err)
	}
	if unl.Demand.Moved != 0 || len(unl.Demand.Warnings) != 0 {
		t.Errorf("unlimited run: moved %s, warnings %q", unl.Demand.Moved, unl.Demand.Warnings)
	}
}
