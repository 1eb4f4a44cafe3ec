package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/internal/golden"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/throttlelab/throttlelab/internal/browsertest"
)

// chartCheck runs in the page: for every chart, how many series paths have a
// non-empty box, and for every picture whether it decoded.
const chartCheck = `(() => {
  const out = [];
  document.querySelectorAll("svg.chart").forEach(svg => {
    let drawn = 0;
    svg.querySelectorAll("path.series").forEach(p => {
      const b = p.getBBox();
      if ((b.width > 0 || b.height > 0) && p.getTotalLength() > 0) drawn++;
    });
    const r = svg.getBoundingClientRect();
    out.push({id: svg.id, drawn: drawn, width: r.width, height: r.height});
  });
  document.querySelectorAll("img").forEach((img, i) => {
    out.push({id: "img" + i, drawn: img.complete && img.naturalWidth > 0 ? 1 : 0, width: img.width, height: img.height});
  });
  return out;
})()`

// fitCheck runs in the page: whether the page scrolls sideways, and each
// results table's width against its box's.
const fitCheck = `(() => {
  const d = document.documentElement;
  const tables = [...document.querySelectorAll("table.results")].map(t => ({scroll: t.scrollWidth, box: t.parentElement.clientWidth}));
  return {page: d.scrollWidth, client: d.clientWidth, tables: tables};
})()`

// hoverCheck moves the pointer over the first chart's first line, as a
// mouse would, and returns the read-out it shows.
const hoverCheck = `(() => {
  const svg = document.querySelector("svg.chart[data-sx]");
  const path = svg.querySelector("path.series");
  const pt = path.getPointAtLength(path.getTotalLength() / 2);
  const m = svg.getScreenCTM();
  const x = pt.x * m.a + m.e, y = pt.y * m.d + m.f;
  svg.dispatchEvent(new MouseEvent("mousemove", {clientX: x, clientY: y, bubbles: true}));
  return svg.querySelector("text.readout").textContent;
})()`

type fit struct {
	Page   float64 `json:"page"`
	Client float64 `json:"client"`
	Tables []struct {
		Scroll float64 `json:"scroll"`
		Box    float64 `json:"box"`
	} `json:"tables"`
}

type drawn struct {
	ID     string  `json:"id"`
	Drawn  int     `json:"drawn"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
}

// TestInBrowser opens each golden report from disk in headless Chromium: no
// console error, no exception, no request leaving the file, every chart drawn
// with visible lines, every picture decoded; and saves a screenshot.
func TestInBrowser(t *testing.T) {
	bctx := browsertest.Start(t, 1200, 900)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "report.html")
			if err := os.WriteFile(path, render(t, c.dirs), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := chromedp.NewContext(bctx)
			defer cancel()
			ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			problems := browsertest.Watch(ctx)
			var got []drawn
			var shot []byte
			var fits fit
			var readout string
			err := chromedp.Run(ctx, network.Enable(), runtime.Enable(),
				chromedp.Navigate("file://"+path),
				chromedp.WaitReady("footer"),
				chromedp.Evaluate(chartCheck, &got),
				chromedp.Evaluate(hoverCheck, &readout),
				chromedp.FullScreenshot(&shot, 100), // 100: PNG
				// A 1000 px window, less a 15 px scroll bar: the tables
				// fit, nothing scrolls sideways.
				chromedp.EmulateViewport(985, 900),
				chromedp.Evaluate(fitCheck, &fits))
			if err != nil {
				t.Fatal(err)
			}
			if fits.Page > fits.Client {
				t.Errorf("at 1000 px the page is %v px wide, wider than its %v px", fits.Page, fits.Client)
			}
			for i, tb := range fits.Tables {
				if tb.Scroll > tb.Box {
					t.Errorf("at 1000 px results table %d is %v px wide in a %v px box", i, tb.Scroll, tb.Box)
				}
			}
			if !strings.Contains(readout, ": x ") {
				t.Errorf("hovering over a line shows %q, want its name and values", readout)
			}
			for _, p := range problems() {
				t.Error(p)
			}
			charts := 0
			for _, d := range got {
				if d.Drawn == 0 || d.Width < 100 || d.Height < 30 {
					t.Errorf("%s not drawn: %+v", d.ID, d)
				}
				if !strings.HasPrefix(d.ID, "img") {
					charts++
				}
			}
			if charts < 4 {
				t.Errorf("only %d charts on the page", charts)
			}
			out := filepath.Join(t.TempDir(), c.name+".png")
			if golden.Update() && c.name == "limits" { // the README's picture
				out = filepath.Join("..", "docs", "report-"+c.name+".png")
				os.MkdirAll(filepath.Dir(out), 0o755)
			}
			if err := os.WriteFile(out, shot, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d charts drawn; screenshot %s (%d KB)", charts, out, len(shot)/1024)
		})
	}
}
