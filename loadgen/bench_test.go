package loadgen

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"
)

// apiHandler answers like the workload server's /api: a small JSON body with
// the instance and Server-Timing headers.
func apiHandler(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h["X-Instance"] = []string{"bench"}
	h["Server-Timing"] = []string{"queue;dur=0.000, cpu;dur=0.001, wall;dur=0.002"}
	h["Content-Type"] = []string{"application/json"}
	io.WriteString(w, `{"ok":true}`)
}

// netHTTPDoer is the reference: a plain net/http client doing what HTTPDoer
// does (keep-alive GET, body read and discarded).
type netHTTPDoer struct {
	base   string
	client *http.Client
}

func (d *netHTTPDoer) Do(ctx context.Context, deadline time.Time, target int, req Request, keepBody bool) Response {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, d.base+req.Path, nil)
	if err != nil {
		return Response{ErrKind: ErrOther, Err: err}
	}
	resp, err := d.client.Do(hr)
	if err != nil {
		return Response{ErrKind: classify(ctx, err), Err: err}
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return Response{Status: resp.StatusCode, Bytes: n, Instance: resp.Header.Get("X-Instance")}
}

// BenchmarkDoer sends /api requests from 32 goroutines through HTTPDoer and
// through net/http's client, to the same in-process server: the allocations
// and CPU per request of the load generator's HTTP path (-benchmem,
// -cpuprofile).
func BenchmarkDoer(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(apiHandler))
	defer srv.Close()
	doers := map[string]Doer{
		"throttlelab": NewHTTPDoer([]string{srv.URL}, 32, true),
		"net-http":    &netHTTPDoer{base: srv.URL, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}},
	}
	for _, name := range []string{"throttlelab", "net-http"} {
		d := doers[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var wg sync.WaitGroup
			work := make(chan struct{}, b.N)
			for i := 0; i < b.N; i++ {
				work <- struct{}{}
			}
			close(work)
			req := Request{Kind: KindAPI, Path: "/api"}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for w := 0; w < 32; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range work {
						if r := d.Do(ctx, time.Now().Add(10*time.Second), 0, req, false); r.ErrKind != "" {
							b.Error(r.Err)
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

// BenchmarkRunClosedLoop runs the whole closed loop (balancer, records to a
// CSV, histogram) with 32 workers against an in-process /api server, or
// against BENCH_TARGET (say a throttlelab serve pinned to another CPU, which
// keeps the server out of the profile).
func BenchmarkRunClosedLoop(b *testing.B) {
	target := os.Getenv("BENCH_TARGET")
	if target == "" {
		srv := httptest.NewServer(http.HandlerFunc(apiHandler))
		defer srv.Close()
		target = srv.URL
	}
	b.ReportAllocs()
	res, err := Run(context.Background(), Config{
		Mode: ModeRamp, Ramp: Ramp{From: 32, To: 32}, RampStep: time.Hour, Requests: int64(b.N),
		Targets: []string{target}, Workload: WorkloadSpec{Kind: KindAPI}, Records: io.Discard,
	})
	if err != nil {
		b.Fatal(err)
	}
	if res.Summary.Requests != int64(b.N) || len(res.Summary.Errors) > 0 {
		b.Fatalf("%d requests, errors %v", res.Summary.Requests, res.Summary.Errors)
	}
}
