// Package browsertest opens self-contained HTML pages in headless Chromium
// for tests: Debian's chromium with the flags this project's hosts need, a
// fresh profile, and a watch for console errors, exceptions and requests
// that leave the file.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/throttlelab/throttlelab/testenv"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Chromium finds Debian's chromium. In CI it must be there (.ci/run installs
// it); elsewhere the test skips without it.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Unavailable(t, "chromium is not installed (apt-get install chromium; .ci/run installs it): the browser test needs it")
	return ""
}

// Start starts a headless browser with a window of width x height and
// returns its context (a tab: chromedp.NewContext of it opens more); the
// browser ends with the test.
func Start(t testing.TB, width, height int) context.Context {
	t.Helper()
	exe := Chromium(t)
	// Not t.TempDir: Chromium's helper processes may still be writing to the
	// profile when the test ends, and a failed cleanup would fail the test.
	profile, err := os.MkdirTemp("", "throttlelab-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(profile) })
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-crash-reporter", true), chromedp.Flag("disable-breakpad", true),
		chromedp.UserDataDir(profile), chromedp.WindowSize(width, height),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Run(bctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	return bctx
}

// Watch collects what is wrong with the pages ctx opens: console errors and
// warnings, exceptions, and requests leaving the file (a report must open
// offline). Run network.Enable and runtime.Enable in the tab; the returned
// function gives what was seen so far.
func Watch(ctx context.Context) func() []string {
	var mu sync.Mutex
	var problems []string
	chromedp.ListenTarget(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError || e.Type == runtime.APITypeWarning {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value))
				}
				problems = append(problems, fmt.Sprintf("console %s: %s", e.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Error())
		case *network.EventRequestWillBeSent:
			if u := e.Request.URL; !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") {
				problems = append(problems, "request leaving the file: "+u)
			}
		}
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}
