package limitmap

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/throttlelab/throttlelab/internal/browsertest"
)

// mapCheck runs in the page: per heat map its drawn size, the cells with a
// box, the contour lines' length and the measured markers.
const mapCheck = `(() => Array.from(document.querySelectorAll("svg.heatmap")).map(svg => {
  const r = svg.getBoundingClientRect();
  let cells = 0, contour = 0;
  svg.querySelectorAll("rect.cell").forEach(c => { const b = c.getBBox(); if (b.width > 0 && b.height > 0) cells++; });
  svg.querySelectorAll("path.contour").forEach(p => { contour += p.getTotalLength(); });
  return {id: svg.id, width: r.width, height: r.height, cells: cells, contour: contour,
    markers: svg.querySelectorAll("g.measured circle").length,
    useline: svg.querySelector("path.useline").getTotalLength()};
}))()`

type drawnMap struct {
	ID      string  `json:"id"`
	Width   float64 `json:"width"`
	Height  float64 `json:"height"`
	Cells   int     `json:"cells"`
	Contour float64 `json:"contour"`
	Markers int     `json:"markers"`
	UseLine float64 `json:"useline"`
}

// TestInBrowser opens the acceptance map's report in headless Chromium: no
// console error, no request leaving the file, both heat maps drawn with
// every cell, contours, the mean-use line and the measured marker; and
// saves a screenshot.
func TestInBrowser(t *testing.T) {
	m, err := acceptance()
	if err != nil {
		t.Fatal(err)
	}
	withPoint := *m
	withPoint.Measured = fixedMap().Measured
	withPoint.Measured[0].LimitMilli, *withPoint.Measured[0].RateRPS = 300, 100
	var page bytes.Buffer
	if err := WriteHTML(&page, &withPoint); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := chromedp.NewContext(browsertest.Start(t, 1500, 1000))
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	problems := browsertest.Watch(ctx)
	var got []drawnMap
	var shot []byte
	err = chromedp.Run(ctx, network.Enable(), runtime.Enable(),
		chromedp.Navigate("file://"+path),
		chromedp.WaitReady("footer"),
		chromedp.Evaluate(mapCheck, &got),
		chromedp.FullScreenshot(&shot, 100))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems() {
		t.Error(p)
	}
	if len(got) != 2 {
		t.Fatalf("%d heat maps in the page, want 2", len(got))
	}
	for _, d := range got {
		if d.Width < 300 || d.Height < 200 || d.Cells != len(m.Cells) || d.Contour < 100 || d.Markers != 1 || d.UseLine < 50 {
			t.Errorf("%s not drawn whole: %+v (want %d cells)", d.ID, d, len(m.Cells))
		}
	}
	out := filepath.Join(t.TempDir(), "map.png")
	if err := os.WriteFile(out, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("drawn: %+v; screenshot %s (%d KB)", got, out, len(shot)/1024)
}
