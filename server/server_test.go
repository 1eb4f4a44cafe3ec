package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/workload"
)

var testCal = func() workload.BurnCalibration {
	c, err := workload.CalibrateBurn(2_000_000, 3)
	if err != nil {
		panic(err)
	}
	return c
}()

// start runs a server on a free loopback port until the test ends. stop shuts it
// down and returns Serve's error; it may be called more than once.
func start(t *testing.T, cfg Config) (s *Server, base string, stop func() error) {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "test"
	}
	if cfg.Burn.IterationsPerMs == 0 {
		cfg.Burn = testCal
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var serveErr error
	go func() { serveErr = s.Serve(ctx, ln); close(done) }()
	stop = func() error {
		cancel()
		<-done
		return serveErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, "http://" + ln.Addr().String(), stop
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, b, err := fetch(url)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// fetch is get for goroutines other than the test's own.
func fetch(url string) (*http.Response, []byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// timing parses a Server-Timing header into durations in ms.
func timing(t *testing.T, h string) map[string]float64 {
	t.Helper()
	tm, err := ParseTiming(h)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]float64{"queue": ms(tm.Queue), "cpu": ms(tm.CPU), "wall": ms(tm.Wall)}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func TestBadInput(t *testing.T) {
	_, base, _ := start(t, Config{MaxCPU: time.Second})
	tests := []struct {
		method, path string
		code         int
		reason       string
	}{
		{"GET", "/tile?x=170&y=0", 400, "x=170 out of range"},
		{"GET", "/tile?x=0&y=153", 400, "y=153 out of range"},
		{"GET", "/tile?x=-1&y=0", 400, "out of range"},
		{"GET", "/tile?x=a&y=0", 400, `x="a" is not an integer`},
		{"GET", "/tile?x=1", 400, "missing parameter y"},
		{"GET", "/tile?x=1&y=1&z=2", 400, `unknown parameter "z"`},
		{"GET", "/tile?x=1&x=2&y=1", 400, `"x" given 2 times`},
		{"GET", "/tile?x=%zz&y=1", 400, "malformed query"},
		{"GET", "/tile?x=99999999999999999999&y=1", 400, "not an integer"},
		{"GET", "/burn", 400, "give iterations=N or cpu=DURATION"},
		{"GET", "/burn?iterations=0", 400, "positive integer"},
		{"GET", "/burn?iterations=-5", 400, "positive integer"},
		{"GET", "/burn?iterations=1e9x", 400, "positive integer"},
		{"GET", "/burn?iterations=99999999999999", 400, "over the limit"},
		{"GET", "/burn?cpu=2s", 400, "over the limit of 1s"},
		{"GET", "/burn?cpu=5", 400, "is not a duration"},
		{"GET", "/burn?cpu=-5ms", 400, "positive duration"},
		{"GET", "/burn?cpu=5ms&iterations=3", 400, "not both"},
		{"GET", "/api?x=1", 400, "unknown parameter"},
		{"GET", "/nope", 404, `no endpoint "/nope"`},
		{"GET", "/%0Ainjected", 404, `no endpoint "/\ninjected"`},
		{"GET", "/", 404, `no endpoint "/"`},
		{"POST", "/tile?x=1&y=1", 405, `method "POST" not allowed`},
		{"DELETE", "/api", 405, "use GET"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, base+tt.path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body := string(b)
			if resp.StatusCode != tt.code || !strings.Contains(body, tt.reason) {
				t.Errorf("%d %q, want %d containing %q", resp.StatusCode, body, tt.code, tt.reason)
			}
			if strings.Count(strings.TrimSpace(body), "\n") != 0 {
				t.Errorf("reason is not one line: %q", body)
			}
			if resp.Header.Get("X-Instance") != "test" {
				t.Errorf("X-Instance = %q", resp.Header.Get("X-Instance"))
			}
		})
	}
	// It still serves after all that.
	if resp, _ := get(t, base+"/api"); resp.StatusCode != 200 {
		t.Errorf("/api after bad input: %d", resp.StatusCode)
	}
}

func TestTile(t *testing.T) {
	_, base, _ := start(t, Config{})
	resp, body := get(t, base+"/tile?x=85&y=70")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	img, err := png.Decode(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	g, ok := img.(*image.Gray)
	if !ok || g.Bounds().Dx() != 200 || g.Bounds().Dy() != 200 {
		t.Fatalf("tile is a %T of %v, want 200x200 8-bit grey", img, img.Bounds())
	}
	// The decoded pixels hash to the tile's known hash, and the headers agree.
	want, n := workload.RenderTile(workload.Tile{X: 85, Y: 70}, nil)
	sum := sha256.Sum256(g.Pix)
	wantSum := workload.HashPixels(want)
	if sum != wantSum || resp.Header.Get("X-Tile-Sha256") != hex.EncodeToString(wantSum[:]) ||
		resp.Header.Get("X-Tile-Iterations") != strconv.FormatUint(n, 10) {
		t.Errorf("tile pixels or headers differ from the kernel's: sha %x headers %v", sum, resp.Header)
	}
	tm := timing(t, resp.Header.Get("Server-Timing"))
	if tm["cpu"] <= 0 || tm["wall"] < tm["queue"] {
		t.Errorf("Server-Timing %v: want cpu > 0 and wall >= queue", tm)
	}
}

func TestBurnAndAPI(t *testing.T) {
	_, base, _ := start(t, Config{Name: "b1"})
	resp, body := get(t, base+"/burn?cpu=20ms")
	var out struct{ Iterations uint64 }
	if err := json.Unmarshal(body, &out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s %v", resp.StatusCode, body, err)
	}
	if want := testCal.Iterations(20 * time.Millisecond); out.Iterations != want {
		t.Errorf("cpu=20ms ran %d iterations, want %d", out.Iterations, want)
	}
	tm := timing(t, resp.Header.Get("Server-Timing"))
	// CPU time is measured, not assumed: within wide bounds of what was asked.
	if tm["cpu"] < 5 || tm["cpu"] > 200 || tm["wall"] < tm["cpu"]*0.9 {
		t.Errorf("burn of 20ms CPU: Server-Timing %v", tm)
	}
	resp, body = get(t, base+"/burn?iterations=1000")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"iterations":1000`) {
		t.Errorf("iterations=1000: %d %s", resp.StatusCode, body)
	}
	resp, body = get(t, base+"/api")
	if resp.StatusCode != 200 || string(body) != "{\"ok\":true}\n" || resp.Header.Get("X-Instance") != "b1" || resp.Header.Get("Server-Timing") == "" {
		t.Errorf("/api: %d %q %v", resp.StatusCode, body, resp.Header)
	}
}

func TestInfoAndMetrics(t *testing.T) {
	lim := &cgroup.CPULimits{Mode: cgroup.ModeHybrid, CPUVersion: "v1", QuotaUsec: 50000, PeriodUsec: 100000, LimitCores: 0.5}
	_, base, _ := start(t, Config{Name: "i1", Concurrency: Single, Info: Info{GOMAXPROCS: 3, GOMAXPROCSSource: "flag", Limits: lim}})
	get(t, base+"/burn?cpu=1ms")
	get(t, base+"/tile?x=0&y=0")
	_, body := get(t, base+"/info")
	var info InfoResponse
	if err := json.Unmarshal(body, &info); err != nil {
		t.Fatal(err)
	}
	if info.Name != "i1" || info.Concurrency != Single || info.GOMAXPROCS != 3 || info.Limits == nil || info.Limits.LimitCores != 0.5 ||
		info.Burn.IterationsPerMs != testCal.IterationsPerMs || info.MaxCPUMs != 10000 || info.Tiles["max_iter"] != float64(workload.MaxIter) {
		t.Errorf("/info = %s", body)
	}
	resp, body := get(t, base+"/metrics")
	m := string(body)
	for _, want := range []string{
		`throttlelab_requests_total{code="200",endpoint="burn",instance="i1"} 1`,
		`throttlelab_requests_total{code="200",endpoint="tile",instance="i1"} 1`,
		`throttlelab_request_duration_seconds_count{endpoint="tile",instance="i1"} 1`,
		`throttlelab_request_cpu_seconds_total{endpoint="burn",instance="i1"}`,
		`throttlelab_requests_in_flight{instance="i1"} 0`,
		`process_cpu_seconds_total`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if resp.StatusCode != 200 {
		t.Errorf("/metrics: %d", resp.StatusCode)
	}
}

// waitInflight waits until the server has n requests admitted. It polls a
// counter the server keeps, not the clock: the deadline is only a safety net.
func waitInflight(t *testing.T, s *Server, n int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for s.inflight.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("server never had %d requests in flight (has %d)", n, s.inflight.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

func TestSingleServesInArrivalOrder(t *testing.T) {
	s, base, _ := start(t, Config{Concurrency: Single})
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	timings := make([]map[string]float64, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _, err := fetch(base + "/burn?cpu=30ms")
			if err != nil {
				t.Error(err)
				return
			}
			tm, err := ParseTiming(resp.Header.Get("Server-Timing"))
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			order = append(order, i)
			timings[i] = map[string]float64{"queue": ms(tm.Queue), "cpu": ms(tm.CPU), "wall": ms(tm.Wall)}
			mu.Unlock()
		}()
		// Each request is admitted (and queued) before the next is sent.
		waitInflight(t, s, int64(i+1))
	}
	wg.Wait()
	if fmt.Sprint(order) != "[0 1 2 3]" {
		t.Errorf("single mode finished requests in order %v, want arrival order [0 1 2 3]", order)
	}
	// The last waited behind three 30 ms requests: its queue time covers at least
	// most of their CPU time.
	if timings[3]["queue"] < timings[0]["cpu"] {
		t.Errorf("last request queued %.1f ms, less than the first one's CPU %.1f ms", timings[3]["queue"], timings[0]["cpu"])
	}
}

func TestMaxInflightRefuses(t *testing.T) {
	s, base, _ := start(t, Config{Concurrency: Single, MaxInflight: 2})
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); fetch(base + "/burn?cpu=200ms") }()
		waitInflight(t, s, int64(i+1))
	}
	resp, body := get(t, base+"/api")
	if resp.StatusCode != 503 || !strings.Contains(string(body), "the maximum is 2") || resp.Header.Get("Retry-After") == "" {
		t.Errorf("third request: %d %q, want 503 naming the in-flight maximum", resp.StatusCode, body)
	}
	// Control endpoints are not work: they answer even when the server is full.
	if resp, _ := get(t, base+"/healthz"); resp.StatusCode != 200 {
		t.Errorf("/healthz when full: %d", resp.StatusCode)
	}
	wg.Wait()
}

func TestQueuedClientGoneIsSkipped(t *testing.T) {
	s, base, _ := start(t, Config{Concurrency: Single})
	go fetch(base + "/burn?cpu=100ms")
	waitInflight(t, s, 1)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/burn?cpu=5s", nil)
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	waitInflight(t, s, 2)
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("cancelled request succeeded")
	}
	// The 5 s burn was skipped: the server is empty again long before 5 s of CPU.
	waitInflight(t, s, 0)
	// The client that gave up is counted as a 499, once.
	if got := testutil.ToFloat64(s.metrics.requests.WithLabelValues("burn", "499")); got != 1 {
		t.Errorf("499 count = %g, want 1", got)
	}
}

func TestGracefulShutdown(t *testing.T) {
	for _, conc := range []Concurrency{Goroutine, Single} {
		t.Run(string(conc), func(t *testing.T) {
			s, base, stop := start(t, Config{Concurrency: conc})
			type result struct {
				code int
				err  error
			}
			res := make(chan result, 1)
			go func() {
				resp, err := http.Get(base + "/burn?cpu=150ms")
				if err != nil {
					res <- result{0, err}
					return
				}
				resp.Body.Close()
				res <- result{resp.StatusCode, nil}
			}()
			waitInflight(t, s, 1)
			stopped := make(chan error, 1)
			go func() { stopped <- stop() }()
			r := <-res
			if r.err != nil || r.code != 200 {
				t.Errorf("in-flight request during shutdown: %d %v, want 200", r.code, r.err)
			}
			if err := <-stopped; err != nil {
				t.Errorf("Serve: %v", err)
			}
			if _, err := http.Get(base + "/api"); err == nil {
				t.Error("server still accepts after shutdown")
			}
		})
	}
}

func TestNewRejects(t *testing.T) {
	for _, cfg := range []Config{
		{Burn: testCal},
		{Name: "x"},
		{Name: "x", Burn: testCal, Concurrency: "threads"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// TestFloodStaysBounded sends far more concurrent requests than the server admits:
// the excess is refused with 503, admission never exceeds the bound, and the heap
// does not grow with the flood.
func TestFloodStaysBounded(t *testing.T) {
	for _, conc := range []Concurrency{Goroutine, Single} {
		t.Run(string(conc), func(t *testing.T) {
			s, base, _ := start(t, Config{Concurrency: conc, MaxInflight: 8})
			tr := &http.Transport{MaxIdleConnsPerHost: 300, MaxConnsPerHost: 300}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			const n = 300
			codes := make(chan int, n)
			var wg sync.WaitGroup
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := client.Get(base + "/tile?x=85&y=70")
					if err != nil {
						codes <- 0
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					codes <- resp.StatusCode
				}()
			}
			wg.Wait()
			close(codes)
			count := map[int]int{}
			for c := range codes {
				count[c]++
			}
			if count[200] == 0 || count[503] == 0 || count[200]+count[503] != n {
				t.Errorf("status counts %v: want some 200, some 503, nothing else", count)
			}
			if p := s.PeakInflight(); p > 8 || p < 1 {
				t.Errorf("peak in flight %d, want 1..8", p)
			}
			var after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&after)
			if grow := int64(after.HeapInuse) - int64(before.HeapInuse); grow > 64<<20 {
				t.Errorf("heap grew by %d MiB over a flood of %d requests", grow>>20, n)
			}
		})
	}
}

func TestSkipCPUClock(t *testing.T) {
	_, base, _ := start(t, Config{SkipCPUClock: true})
	resp, _ := get(t, base+"/burn?cpu=2ms")
	h := resp.Header.Get("Server-Timing")
	tm, err := ParseTiming(h)
	if err != nil || strings.Contains(h, "cpu") || tm.CPU != -1 || tm.Wall <= 0 {
		t.Errorf("Server-Timing %q (%+v, %v): want queue and wall only", h, tm, err)
	}
	_, body := get(t, base+"/info")
	if !strings.Contains(string(body), `"cpu_clock": false`) {
		t.Errorf("/info does not say the CPU clock is off: %s", body)
	}
}

// TestContentLength checks that small and large bodies both carry a
// Content-Length (the small ones from net/http itself) and none is chunked.
func TestContentLength(t *testing.T) {
	_, base, _ := start(t, Config{})
	for _, path := range []string{"/api", "/burn?iterations=10", "/tile?x=85&y=70"} {
		resp, body := get(t, base+path)
		if resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) != 0 {
			t.Errorf("%s: Content-Length %d for a body of %d, transfer encoding %v", path, resp.ContentLength, len(body), resp.TransferEncoding)
		}
	}
}
