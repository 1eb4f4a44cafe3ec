package report

import (
	"html"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/record"
)

// TestReportSectionAdvisesAsAdviseDoes: a report's advice section reads a
// throttled run as advise RESULTS_DIR does (its demand rebuilt from the
// throttling counters), so both give the same answer. Before they shared
// FromRun, the section replayed the throttled use as it was and advised a
// smaller limit than advise did for the same run.
func TestReportSectionAdvisesAsAdviseDoes(t *testing.T) {
	dir := filepath.Join("testdata", "limits")
	set, err := ReadSet([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	section := html.UnescapeString(string(AdviceSection(set.Sources)))
	for _, c := range []struct{ config, instance string }{{"limited", "limited-0"}, {"unlimited", "unlimited-0"}} {
		rec, err := record.ReadDemand(dir, c.config, c.instance)
		if err != nil {
			t.Fatal(err)
		}
		a, err := advise.Advise(rec.Demand, advise.Request{}, advise.Sampled{CPUStat: rec.CPUStat, LimitMilli: rec.LimitMilli})
		if err != nil {
			t.Fatal(err)
		}
		if want := advise.Answer(a); !strings.Contains(section, want) {
			t.Errorf("config %s: advise says %q; the report's section does not:\n%s", c.config, want, section)
		}
	}
	if !strings.Contains(section, "rebuilt from the throttling counters") {
		t.Errorf("the section does not say the throttled run's demand was rebuilt:\n%s", section)
	}
}
