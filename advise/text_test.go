package advise_test

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/demand"
)

// fixtureAdvice is the advice on the e2e fixture: 12 s of samples in two
// blocks of 6 s, a recommendation with delays replayed.
func fixtureAdvice(t *testing.T) *advise.Advice {
	t.Helper()
	fh, err := os.Open("../cmd/throttlelab/testdata/advise-usage.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	d, err := demand.ReadCSV(fh)
	if err != nil {
		t.Fatal(err)
	}
	a, err := advise.Advise(d, advise.Request{GridSize: 6}, advise.Sampled{Source: "fixture"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Window.Blocks) != 2 || math.Round(a.Window.BlockSeconds) != 6 || math.Round(a.Window.Seconds) != 12 || a.Recommendation.DelayP99MsRange == nil {
		t.Fatalf("the fixture's window: %+v, delay range %v; want 12 s in two blocks of 6 s and a delay interval", a.Window, a.Recommendation.DelayP99MsRange)
	}
	return a
}

// TestDelayBeyondTheSamples: an interval's end longer than a block (the
// day of samples that printed [0.0-1189441.5] ms) and a value longer than
// the window are written >X, in the answer and in the grid, never as the
// number; an end within the block is still a number.
func TestDelayBeyondTheSamples(t *testing.T) {
	a := fixtureAdvice(t)
	r := &a.Recommendation
	r.DelayP99Ms, r.DelayP99MsRange = 41.5, &advise.Range{0, 1189441.5}
	for i := range a.Evaluations {
		if e := &a.Evaluations[i]; e.Point() == r.Point() {
			e.DelayP99Ms, e.DelayP99MsRange, e.DelayMaxMs = 41.5, r.DelayP99MsRange, 15000
		}
	}
	var brief, grid strings.Builder
	if err := advise.WriteText(&brief, a); err != nil {
		t.Fatal(err)
	}
	if err := advise.WriteTextGrid(&grid, a); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"WriteText": brief.String(), "WriteTextGrid": grid.String()} {
		if strings.Contains(text, "1189441") || strings.Contains(text, "15000") {
			t.Errorf("%s writes a delay past the samples as a number:\n%s", name, text)
		}
		if !strings.Contains(text, "p99 added delay 41.5 ms [0.0->6s]") && !strings.Contains(text, "41.5 ms [0.0->6s] p99 added delay") {
			t.Errorf("%s: want the recommendation's delay as 41.5 ms [0.0->6s]:\n%s", name, text)
		}
	}
	row := ""
	for _, l := range strings.Split(grid.String(), "\n") {
		if strings.HasSuffix(strings.TrimSpace(l), "<") && strings.Contains(l, "[0.0->6s]") {
			row = l
		}
	}
	if !strings.Contains(row, "41.5ms") || !strings.Contains(row, ">12s") {
		t.Errorf("the grid's row of the recommendation: %q, want p99 41.5ms, [0.0->6s] and max >12s", row)
	}
	if !strings.Contains(grid.String(), "(>X : longer than the samples can show") {
		t.Errorf("the grid does not say what >X means:\n%s", grid.String())
	}

	// Within the block: the number.
	r.DelayP99MsRange = &advise.Range{0, 5999}
	brief.Reset()
	if err := advise.WriteText(&brief, a); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(brief.String(), "41.5 ms [0.0-5999.0]") {
		t.Errorf("an end within the block is not written as its number:\n%s", brief.String())
	}
}

// TestBriefKeepsToItsLines: with more warnings than fit, the text still
// has at most advise.BriefLines lines, ends with the caller's line, and
// counts the warnings it left out.
func TestBriefKeepsToItsLines(t *testing.T) {
	a := fixtureAdvice(t)
	for i := range 20 {
		a.Warnings = append(a.Warnings, fmt.Sprintf("made-up warning %d", i))
	}
	var b strings.Builder
	if err := advise.WriteBrief(&b, a, "(more: --details)"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != advise.BriefLines {
		t.Fatalf("%d lines, want %d (full):\n%s", len(lines), advise.BriefLines, b.String())
	}
	if lines[len(lines)-1] != "(more: --details)" {
		t.Errorf("the last line is %q, want the caller's", lines[len(lines)-1])
	}
	shown := strings.Count(b.String(), "warning: ")
	want := fmt.Sprintf("(%d warnings more, with the grid)", len(a.Warnings)+1-shown) // +1: the short window's note
	if lines[len(lines)-2] != want {
		t.Errorf("the line before the last is %q, want %q", lines[len(lines)-2], want)
	}
}
