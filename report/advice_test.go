package report

import (
	"bytes"
	"html"
	"html/template"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestSectionsDrawnAtOnce: WriteHTML draws its sections at once (beside the
// loads and each other) and places them in the order given, not the order
// they finish in, and the advice section over two sources (each config's
// advice worked out at once) is the same, byte for byte, every time and
// with the sources in one section or two.
func TestSectionsDrawnAtOnce(t *testing.T) {
	srcs := load(t, []string{"testdata/limits", "testdata/limits-sim"})
	second := make(chan struct{})
	first := func([]*Source) template.HTML {
		select {
		case <-second: // the second section ran before this one ended
		case <-time.After(time.Minute):
			t.Error("the first section never saw the second one run: the sections are drawn one after the other")
		}
		return "<p>first section</p>"
	}
	last := func([]*Source) template.HTML { close(second); return "<p>second section</p>" }
	var b bytes.Buffer
	if err := WriteHTML(&b, srcs, Options{Sections: []Section{first, last}}); err != nil {
		t.Fatal(err)
	}
	i, j := strings.Index(b.String(), "first section"), strings.Index(b.String(), "second section")
	if i < 0 || j < i {
		t.Errorf("sections at %d and %d: want both, the first one first", i, j)
	}
	both := AdviceSection(srcs)
	if both == "" || !strings.Contains(string(both), "adv1-") {
		t.Fatalf("the advice section over two sources has no advice of the second:\n%s", both)
	}
	for range 3 {
		if again := AdviceSection(srcs); again != both {
			t.Fatal("the advice section differs from one drawing to the next")
		}
	}
	one, two := AdviceSection(srcs[:1]), AdviceSection(srcs[1:])
	if !strings.HasPrefix(string(both), strings.TrimSuffix(string(one), "</section>\n")) {
		t.Error("the advice section over two sources does not start with the first source's")
	}
	if two == "" {
		t.Error("no advice section over the second source alone")
	}
}

// BenchmarkAdviceSection draws the advice section over the testdata's
// measured and simulated runs (four configs' advices) on one CPU and on
// every CPU, in alternating rounds so that a shared machine's load hits
// both alike, and reports the medians' ratio: how much sooner the section
// is done with its advices worked out at once. Its CPU time is the same
// either way; the ratio is at most the number of CPUs, and less on a busy
// machine.
func BenchmarkAdviceSection(b *testing.B) {
	srcs := load(b, []string{"testdata/limits", "testdata/limits-sim"})
	procs := runtime.GOMAXPROCS(0)
	timeAt := func(n int) float64 {
		prev := runtime.GOMAXPROCS(n)
		defer runtime.GOMAXPROCS(prev)
		start := time.Now()
		if AdviceSection(srcs) == "" {
			b.Fatal("no advice section")
		}
		return time.Since(start).Seconds()
	}
	var one, all []float64
	for range b.N * 5 {
		one, all = append(one, timeAt(1)), append(all, timeAt(procs))
	}
	median := func(xs []float64) float64 { slices.Sort(xs); return xs[len(xs)/2] }
	b.ReportMetric(median(one), "s/section-1cpu")
	b.ReportMetric(median(all), "s/section")
	b.ReportMetric(median(one)/median(all), "1cpu/all")
}
