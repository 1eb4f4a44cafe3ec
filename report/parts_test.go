package report

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/record"
)

func TestDownsampleKeepsPeaks(t *testing.T) {
	var p []Point
	for i := 0; i < 10000; i++ {
		p = append(p, Point{float64(i), float64(i % 7)})
	}
	p[4321].Y, p[8765].Y = 100, -50
	d := Downsample(p, 100)
	if len(d) > 200 {
		t.Fatalf("%d points, want at most 200", len(d))
	}
	var hi, lo bool
	for i, q := range d {
		hi, lo = hi || q.Y == 100, lo || q.Y == -50
		if i > 0 && q.X <= d[i-1].X {
			t.Fatalf("points out of order at %d", i)
		}
	}
	if !hi || !lo {
		t.Errorf("peak kept %v, trough kept %v", hi, lo)
	}
	if short := Downsample(p[:50], 100); len(short) != 50 {
		t.Errorf("a short series was thinned to %d", len(short))
	}
}

func TestDistributionSumsTo100(t *testing.T) {
	lat := []float64{1, 1.1, 2, 5, 5, 5, 50, 120}
	sum := 0.0
	pts := distribution(lat)
	for _, p := range pts {
		sum += p.Y
	}
	if math.Abs(sum-100) > 1e-9 || pts[0].Y != 0 || pts[len(pts)-1].Y != 0 {
		t.Errorf("sum %v, ends %v %v", sum, pts[0].Y, pts[len(pts)-1].Y)
	}
}

func TestPercentilesEndAtMax(t *testing.T) {
	var lat []float64
	for i := 1; i <= 1000; i++ {
		lat = append(lat, float64(i))
	}
	pts := percentiles(lat)
	if pts[0].Y != 1 || pts[len(pts)-1].Y != 1000 {
		t.Errorf("first %v last %v", pts[0], pts[len(pts)-1])
	}
	// Nearest rank: the points either side of the median bracket it.
	for i := 1; i < len(pts); i++ {
		if pts[i-1].X <= 50 && pts[i].X > 50 && (pts[i-1].Y > 500 || pts[i].Y < 500) {
			t.Errorf("around p50: %v %v", pts[i-1], pts[i])
		}
	}
	for i := 1; i < len(pts); i++ {
		if pts[i].Y < pts[i-1].Y || pts[i].X < pts[i-1].X {
			t.Fatalf("not monotone at %d: %v %v", i, pts[i-1], pts[i])
		}
	}
}

func TestStairsAndMarks(t *testing.T) {
	// One core busy for the first 100 ms, idle for the next 100 ms; throttled
	// once between 40 and 50 ms and once between 150 and 160 ms.
	g := GroupUsage{Name: "r001-x-0"}
	for i := 0; i <= 20; i++ {
		at := time.Duration(i) * 10 * time.Millisecond
		used := min(at, 100*time.Millisecond)
		var thr uint64
		if i >= 5 {
			thr++
		}
		if i >= 16 {
			thr++
		}
		g.At, g.Usage, g.Throttled = append(g.At, at), append(g.Usage, used), append(g.Throttled, thr)
	}
	s := stairs(g, 100*time.Millisecond)
	if len(s) != 4 || s[0].Y != 1 || s[1].Y != 1 || s[2].Y != 0 || s[3].X != 0.2 {
		t.Errorf("100 ms stairs %v", s)
	}
	m := throttleMarks(g)
	if len(m) != 2 || m[0].X0 != 0.04 || m[0].X1 != 0.05 || m[1].X0 != 0.15 {
		t.Errorf("marks %v", m)
	}
	if InstanceName(g.Name) != "x-0" || InstanceName("noise") != "noise" {
		t.Errorf("instance names %q", InstanceName(g.Name))
	}
}

// TestReportShowsWhatWasMeasured checks the limits report against its data:
// the table's p99 ratio, the limit line, throttle marks only on the limited
// instances, one distribution chart per config and a repeat line each.
func TestReportShowsWhatWasMeasured(t *testing.T) {
	srcs := load(t, []string{"testdata/limits"})
	html := string(render(t, []string{"testdata/limits"}))
	rs := rows(buildEntries(srcs), "load0")
	if len(rs) != 2 || !rs[0].IsReference || rs[1].P99VsReference < 2 {
		t.Fatalf("rows %+v", rs)
	}
	ratio := regexp.MustCompile(`class="worse">([0-9.]+)x<`).FindStringSubmatch(html)
	if ratio == nil || ratio[1] != fmt.Sprintf("%.2f", rs[1].P99VsReference) {
		t.Errorf("table ratio %v, want %.2f", ratio, rs[1].P99VsReference)
	}
	if n := len(regexp.MustCompile(`class="ctitle"[^>]*>Latency distribution: `).FindAllString(html, -1)); n != 2 {
		t.Errorf("%d distribution charts, want 2", n)
	}
	// limited: 2 repeats + the reference's 2 repeats behind.
	limited := html[strings.Index(html, "Latency distribution: limited"):]
	limited = limited[:strings.Index(limited, "</svg>")]
	if n := strings.Count(limited, `class="series"`); n != 4 {
		t.Errorf("%d lines in the limited distribution, want 4", n)
	}
	if n := strings.Count(html, "limit 0.25 cores"); n != 4 {
		t.Errorf("limit drawn %d times, want 4 (one per limited instance)", n)
	}
	for _, sec := range strings.Split(html, "<svg")[1:] {
		marks := strings.Count(sec, `class="mark" x=`)
		switch {
		case strings.Contains(sec, "CPU use of unlimited-0") && marks != 0:
			t.Errorf("the unlimited instance has %d throttle marks", marks)
		case strings.Contains(sec, "CPU use of limited-") && marks == 0:
			t.Errorf("a limited instance has no throttle marks")
		}
	}
}

func TestTableColourOnlyOnRequest(t *testing.T) {
	srcs := load(t, []string{"testdata/limits"})
	var plain, colour strings.Builder
	WriteTable(&plain, srcs, false)
	WriteTable(&colour, srcs, true)
	if strings.Contains(plain.String(), "\x1b[") {
		t.Error("escape codes without colour")
	}
	lines := strings.Split(colour.String(), "\n")
	var ref, limited string
	for _, l := range lines {
		switch {
		case strings.Contains(l, "unlimited (reference)"):
			ref = l
		case strings.Contains(l, " limited "):
			limited = l
		}
	}
	// The reference is dimmed; the limited config (p99 over twice the
	// reference's) is red; the header and units stay as they are.
	if !strings.HasPrefix(ref, ansiDim) || !strings.HasPrefix(limited, ansiRed) || !strings.Contains(colour.String(), "p99 ms") {
		t.Errorf("colours:\n%q\n%q", ref, limited)
	}
	// Colour does not move the columns.
	strip := strings.NewReplacer(ansiDim, "", ansiRed, "", ansiYellow, "", ansiReset, "")
	if strip.Replace(colour.String()) != plain.String() {
		t.Error("the coloured table is not the plain one with colours")
	}
}

// TestTableIsTheSummary: the report's rows are summary.json's figures (one
// aggregation), plus the stall only the request records give.
func TestTableIsTheSummary(t *testing.T) {
	srcs := load(t, []string{"testdata/limits"})
	var runs []*record.Run
	for _, r := range srcs[0].Runs {
		runs = append(runs, r.Run)
	}
	s := record.Summarize(srcs[0].Spec, runs)
	smp, err := record.ReadSamples("testdata/limits", runs)
	if err != nil {
		t.Fatal(err)
	}
	s.AddIntervals(smp)
	rs := rows(buildEntries(srcs), "load0")
	if len(rs) != len(s.Configs) {
		t.Fatalf("%d rows, %d configs in the summary", len(rs), len(s.Configs))
	}
	for i, r := range rs {
		got := r.ConfigSummary
		got.StallMs = 0
		if got.P99MsCI95 == nil || got.P99VsReferenceCI95 == nil {
			t.Errorf("row %s: no intervals", r.Label)
		}
		if !reflect.DeepEqual(got, s.Configs[i]) {
			t.Errorf("row %s:\n%+v\nsummary:\n%+v", r.Label, got, s.Configs[i])
		}
		if r.StallMs <= 0 {
			t.Errorf("row %s: no stall", r.Label)
		}
	}
}
