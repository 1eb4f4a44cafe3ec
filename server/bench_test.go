package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// discard is a ResponseWriter that keeps nothing, so the benchmarks measure the
// handlers, not a recorder.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

// BenchmarkAPI measures the instrumented /api handler against a minimal handler
// that writes the same body: the ratio is the cost of the instrumentation without
// the network.
func BenchmarkAPI(b *testing.B) {
	s, err := New(Config{Name: "bench", Burn: testCal})
	if err != nil {
		b.Fatal(err)
	}
	noClock, err := New(Config{Name: "bench", Burn: testCal, SkipCPUClock: true})
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/api", nil)
	for name, srv := range map[string]*Server{"throttlelab": s, "throttlelab-no-cpu-clock": noClock} {
		b.Run(name, func(b *testing.B) {
			h := srv.Handler()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				h.ServeHTTP(&discard{h: http.Header{}}, req)
			}
		})
	}
	b.Run("minimal", func(b *testing.B) {
		mux := http.NewServeMux()
		mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(apiBody)
		})
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			mux.ServeHTTP(&discard{h: http.Header{}}, req)
		}
	})
}
