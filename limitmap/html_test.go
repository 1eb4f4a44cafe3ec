package limitmap

import (
	"bytes"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/internal/golden"
)

func TestContour(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name  string
		grid  [][]float64
		level float64
		want  []segment
	}{
		{"flat below", [][]float64{{1, 1}, {1, 1}}, 2, nil},
		{"flat above", [][]float64{{3, 3}, {3, 3}}, 2, nil},
		// Rising to the right: the line is vertical, a quarter of the way.
		{"vertical", [][]float64{{1, 5}, {1, 5}}, 2, []segment{{0.25, 0, 0.25, 1}}},
		// Rising upwards: horizontal, half way.
		{"horizontal", [][]float64{{1, 1}, {3, 3}}, 2, []segment{{1, 0.5, 0, 0.5}}},
		// One corner above: the line cuts it off.
		{"corner", [][]float64{{1, 1}, {1, 3}}, 2, []segment{{1, 0.5, 0.5, 1}}},
		{"missing corner", [][]float64{{1, 5}, {nan, 5}}, 2, nil},
	} {
		got := contour(c.grid, c.level)
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
			continue
		}
		for i := range got {
			g, w := got[i], c.want[i]
			if math.Abs(g.x0-w.x0)+math.Abs(g.y0-w.y0)+math.Abs(g.x1-w.x1)+math.Abs(g.y1-w.y1) > 1e-9 {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
			}
		}
	}
	// A saddle gives two lines.
	if got := contour([][]float64{{3, 1}, {1, 3}}, 2); len(got) != 2 {
		t.Errorf("saddle: %v, want two segments", got)
	}
}

func TestHTMLGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, fixedMap()); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, filepath.Join("testdata", "report.html"), b.Bytes())
}

func TestHTMLShowsTheMap(t *testing.T) {
	m, err := acceptance()
	if err != nil {
		t.Fatal(err)
	}
	withPoints := *m
	withPoints.Measured = fixedMap().Measured // 500m at 150 req/s is not on this grid
	withPoints.Measured[0].LimitMilli, *withPoints.Measured[0].RateRPS = 300, 100
	var b bytes.Buffer
	if err := WriteHTML(&b, &withPoints); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	count := func(re string) int { return len(regexp.MustCompile(re).FindAllString(page, -1)) }
	if n := count(`<svg class="heatmap"`); n != 2 {
		t.Errorf("%d heat maps, want 2 (p99 ratio, throttled share)", n)
	}
	if n := count(`<rect class="cell"`); n != 2*len(m.Cells) {
		t.Errorf("%d cells drawn, want %d", n, 2*len(m.Cells))
	}
	overloaded := 0
	for _, c := range m.Cells {
		if c.Overloaded {
			overloaded++
		}
	}
	if n := count(`fill="url\(#hatch-(p99|thr)\)"`); n != 2*overloaded {
		t.Errorf("%d hatched cells, want %d", n, 2*overloaded)
	}
	for _, level := range []string{"1.5", "2", "5"} {
		if n := count(`class="contour" data-level="` + level + `"`); n != 2 {
			t.Errorf("contour %sx drawn %d times, want once per map", level, n)
		}
	}
	if n := count(`class="useline" d="M`); n != 2 {
		t.Errorf("the mean-use line drawn %d times", n)
	}
	if n := count(`<g class="measured">`); n != 2 {
		t.Errorf("%d measured markers, want one per map", n)
	}
	if !strings.Contains(page, `class="mlabel">x1.4<`) || !strings.Contains(page, `class="mlabel">0%<`) {
		t.Error("the measured marker is not labelled with its measured value")
	}
	if !strings.Contains(page, "<title>limit 300m at 100 req/s: p99 x") {
		t.Error("no hover read-out for the cells")
	}
	// Self-contained: nothing loaded from elsewhere.
	for _, bad := range []string{"<script src", "<link", "http://", "https://", "<img"} {
		if strings.Contains(strings.ReplaceAll(page, "http://www.w3.org/2000/svg", ""), bad) {
			t.Errorf("the page holds %q: it must open offline", bad)
		}
	}
}

func TestTextGolden(t *testing.T) {
	m := fixedMap()
	busy := m.Measured[0]
	busy.Measured.ReferenceP99Ms, busy.Measured.P99Ms, busy.Measured.P99Ratio = 342, 6119, 17.9
	m.Measured = append(m.Measured, busy)
	var b bytes.Buffer
	WriteText(&b, m)
	golden.Compare(t, filepath.Join("testdata", "map.txt"), b.Bytes())
	if n := strings.Count(b.String(), "the machine was busy"); n != 1 {
		t.Errorf("%d points said to be measured on a busy machine, want 1:\n%s", n, b.String())
	}
}
