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

// TestAdviceShowsTheKnee: the advice's summary says where the knee is, as
// advise's text does, and the throttled-share curve carries each limit's
// interval as a band around it (low <= predicted <= high, some of it wide).
func TestAdviceShowsTheKnee(t *testing.T) {
	rec, err := record.ReadDemand(filepath.Join("testdata", "limits"), "unlimited", "unlimited-0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := advise.Advise(rec.Demand, advise.Request{}, advise.Sampled{})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Knee) == 0 {
		t.Fatal("no knee in the advice")
	}
	sum := html.UnescapeString(adviceSummary(a))
	if !strings.Contains(sum, "The knee: 50% throttled at "+a.Knee[0].Limits()) {
		t.Errorf("summary lacks the knee (%s at 50%%):\n%s", a.Knee[0].Limits(), sum)
	}
	curve := AdviceCharts(rec.Demand, a, "t")[1]
	s := curve.Series[0]
	if len(s.Lower) != len(s.Points) || len(s.Upper) != len(s.Points) {
		t.Fatalf("no-burst curve: %d points, %d low, %d high", len(s.Points), len(s.Lower), len(s.Upper))
	}
	wide := 0
	for i, p := range s.Points {
		if s.Lower[i].Y > p.Y+1e-9 || s.Upper[i].Y < p.Y-1e-9 {
			t.Errorf("at %.2f cores: %.1f%% outside its interval %.1f-%.1f%%", p.X, p.Y, s.Lower[i].Y, s.Upper[i].Y)
		}
		if s.Upper[i].Y-s.Lower[i].Y > 1 {
			wide++
		}
	}
	if wide == 0 {
		t.Error("no limit's interval is wider than one point of share: the band draws nothing")
	}
	recd := float64(a.Recommendation.LimitMilli) / 1000
	if x := curve.X; x.Max <= 0 || recd < x.Min || recd > x.Max || x.Max > 2*recd+0.05 && x.Max > 1.2*float64(a.Knee[len(a.Knee)-1].HighMilli)/1000+0.05 {
		t.Errorf("limit axis %.2f-%.2f cores: want the recommended %.2f in it and no more than twice it (or past the knee)", x.Min, x.Max, recd)
	}
	if svg := curve.SVG(); !strings.Contains(svg, `<path class="band" data-series="0"`) {
		t.Error("the curve's SVG draws no band path")
	}
}
