package server

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/workload"
)

// FuzzHandler sends arbitrary methods, paths and queries to the handler: it must
// answer every one with a known status and a body, never panic, and never run
// longer than the per-request CPU cap allows. `go test` runs the seeds;
// `go test -fuzz FuzzHandler ./server` explores.
func FuzzHandler(f *testing.F) {
	for _, seed := range []string{
		"GET /tile?x=0&y=0", "GET /tile?x=-0&y=+1", "GET /tile?x=169&y=152", "GET /tile?x=1e3&y=1",
		"GET /burn?cpu=1ms", "GET /burn?cpu=1h", "GET /burn?iterations=18446744073709551615",
		"GET /burn?cpu=0.5us", "GET /burn?cpu=NaNms", "GET /api?", "GET /api?&&&", "GET /%2e%2e/api",
		"PUT /burn", "GET /info?x=1", "GET /tile?x=%00&y=1", "GET //tile?x=1&y=1", "OPTIONS *",
	} {
		f.Add(seed)
	}
	s, err := New(Config{Name: "fuzz", Burn: testCal, MaxCPU: 2 * time.Millisecond})
	if err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	f.Fuzz(func(t *testing.T, line string) {
		method, target, ok := strings.Cut(line, " ")
		if !ok || method == "" || strings.ContainsAny(method, " \t\r\n") {
			return
		}
		if !strings.HasPrefix(target, "/") {
			target = "/" + target
		}
		req, err := http.NewRequest(method, "http://x"+target, nil)
		if err != nil {
			return // not a request a client could send
		}
		// Keep it fast: tiles inside the set are the costliest; the cap covers burns.
		if strings.HasPrefix(req.URL.Path, "/tile") && req.URL.Query().Get("y") != "0" {
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 301, 307, 308, 400, 404, 405:
		default:
			t.Fatalf("%s %s: status %d", method, target, rec.Code)
		}
		if rec.Code >= 400 && (rec.Body.Len() == 0 || strings.Count(strings.TrimSpace(rec.Body.String()), "\n") > 0) {
			t.Fatalf("%s %s: %d without a one-line reason: %q", method, target, rec.Code, rec.Body.String())
		}
	})
}

// FuzzTileQuery feeds /tile arbitrary query strings: a tile is accepted only
// when x and y are each given once, as integers in range; anything else gets
// 400 with a one-line reason from the handler.
func FuzzTileQuery(f *testing.F) {
	for _, seed := range []string{"x=0&y=0", "x=169&y=152", "x=170&y=0", "x=-1&y=0", "x=+1&y=0", "x=1&x=2&y=0", "y=0",
		"x=1e3&y=0", "x=0x10&y=0", "x=99999999999999999999&y=0", "x=%zz&y=0", "x=1;y=0", "x=0&y=0&z=1", "", "&&", "x=%201&y=0"} {
		f.Add(seed)
	}
	s, err := New(Config{Name: "fuzz", Burn: testCal})
	if err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	f.Fuzz(func(t *testing.T, raw string) {
		tile, err := tileQuery(raw)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q: error spans lines: %q", raw, err)
			}
		} else {
			q, perr := url.ParseQuery(raw)
			if perr != nil || len(q) != 2 || len(q["x"]) != 1 || len(q["y"]) != 1 || workload.CheckTile(tile) != nil {
				t.Fatalf("%q accepted as %v", raw, tile)
			}
		}
		// Through the handler: a tile of row 0 is cheap (every pixel escapes
		// at once); others are only checked for refusal.
		if err == nil && tile.Y != 0 {
			return
		}
		req, rerr := http.NewRequest("GET", "http://x/tile", nil)
		if rerr != nil {
			t.Fatal(rerr)
		}
		req.URL.RawQuery = raw
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		want := http.StatusOK
		if err != nil {
			want = http.StatusBadRequest
		}
		if rec.Code != want || (want == 400 && strings.Count(strings.TrimSpace(rec.Body.String()), "\n") > 0) {
			t.Fatalf("/tile?%s: %d %q, want %d", raw, rec.Code, rec.Body.String(), want)
		}
	})
}

// FuzzBurnQuery feeds /burn arbitrary query strings: whatever is accepted
// asks for at least one iteration and at most the per-request CPU cap.
func FuzzBurnQuery(f *testing.F) {
	for _, seed := range []string{"cpu=1ms", "cpu=2ms", "cpu=3ms", "cpu=0", "cpu=-1ms", "cpu=1ns", "cpu=NaNms", "cpu=1e400s",
		"cpu=9223372036854775807ns", "cpu=99999999999h", "iterations=1", "iterations=0", "iterations=18446744073709551616",
		"iterations=-1", "iterations=+5", "iterations=1&cpu=1ms", "cpu=1ms&cpu=1ms", "", "cpu=", "cpu=%ZZ"} {
		f.Add(seed)
	}
	const maxCPU = 2 * time.Millisecond
	s, err := New(Config{Name: "fuzz", Burn: testCal, MaxCPU: maxCPU})
	if err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	limit := testCal.Iterations(maxCPU)
	f.Fuzz(func(t *testing.T, raw string) {
		n, err := burnQuery(raw, testCal, maxCPU)
		if err != nil {
			if n != 0 || strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q: %d, %q", raw, n, err)
			}
		} else if n < 1 || n > limit {
			t.Fatalf("%q accepted as %d iterations, the cap is %d", raw, n, limit)
		}
		req, rerr := http.NewRequest("GET", "http://x/burn", nil)
		if rerr != nil {
			t.Fatal(rerr)
		}
		req.URL.RawQuery = raw
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		want := http.StatusOK
		if err != nil {
			want = http.StatusBadRequest
		}
		if rec.Code != want {
			t.Fatalf("/burn?%s: %d %q, want %d", raw, rec.Code, rec.Body.String(), want)
		}
	})
}
