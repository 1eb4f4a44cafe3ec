package limitmap

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromium finds Debian's chromium; in CI it must be there, elsewhere the
// browser test skips without it (as report's does).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed: .ci/run should have installed it (apt-get install chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium): the browser test needs it")
	return ""
}

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
	exe := chromium(t)
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
	profile, err := os.MkdirTemp("", "throttlelab-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(profile)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-crash-reporter", true), chromedp.Flag("disable-breakpad", true),
		chromedp.UserDataDir(profile), chromedp.WindowSize(1500, 1000),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var mu sync.Mutex
	var problems []string
	chromedp.ListenTarget(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError || e.Type == runtime.APITypeWarning {
				problems = append(problems, fmt.Sprintf("console %s", e.Type))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Error())
		case *network.EventRequestWillBeSent:
			if u := e.Request.URL; !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") {
				problems = append(problems, "request leaving the file: "+u)
			}
		}
	})
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
	mu.Lock()
	for _, p := range problems {
		t.Error(p)
	}
	mu.Unlock()
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
