package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
		// Keep it fast: tiles inside the set take 0.5 s; the cap covers burns.
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
