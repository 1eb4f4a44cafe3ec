package loadgen

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/servertiming"
)

// fakeClock is a clock that only moves when told to: sleeping jumps to the wake-up
// time, and the fake doer advances it by each request's latency.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) SleepUntil(ctx context.Context, t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
	return ctx.Err()
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// fakeDoer answers every request after latency(n) of fake time, n counting from 0.
type fakeDoer struct {
	clock   *fakeClock
	latency func(n int) time.Duration
	mu      sync.Mutex
	n       int
}

func (d *fakeDoer) Do(ctx context.Context, deadline time.Time, target int, req Request, keepBody bool) Response {
	d.mu.Lock()
	n := d.n
	d.n++
	d.mu.Unlock()
	lat := d.latency(n)
	d.clock.advance(lat)
	return Response{Status: 200, Bytes: 12, Instance: "i" + strconv.Itoa(target), Timing: servertiming.Timing{Queue: 0, CPU: lat / 2, Wall: lat}}
}

// readCSV parses requests.csv.
func readCSV(t *testing.T, b []byte) []Record {
	t.Helper()
	recs, err := ReadRecords(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestConstantRateOnFakeClock(t *testing.T) {
	clk := newFakeClock()
	var records bytes.Buffer
	res, err := Run(context.Background(), Config{
		Mode: ModeRate, Rate: 100, Duration: 10 * time.Second, MaxInflight: 1,
		Workload: WorkloadSpec{Kind: KindAPI}, Clock: clk, Records: &records,
		Doer: &fakeDoer{clock: clk, latency: func(int) time.Duration { return time.Millisecond }},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	// Exactly rate x duration requests, the last one due at 9.99 s.
	if s.Requests != 1000 || s.OK != 1000 || s.LateSends != 0 {
		t.Fatalf("summary %+v: want 1000 requests, none late", s)
	}
	recs := readCSV(t, records.Bytes())
	if len(recs) != 1000 {
		t.Fatalf("%d records, want 1000", len(recs))
	}
	for i, r := range recs {
		if r.Intended != time.Duration(i)*10*time.Millisecond || r.Latency != time.Millisecond || r.Seq != int64(i) {
			t.Fatalf("record %d: %v", i, r)
		}
	}
	if s.DurationSec < 9.99 || s.DurationSec > 10.0 || s.Latency.P50 != 1 || s.Latency.Max != 1 {
		t.Errorf("duration %.4f s, latency %+v", s.DurationSec, s.Latency)
	}

	// With a request limit instead: N requests in N/rate seconds.
	clk = newFakeClock()
	res, err = Run(context.Background(), Config{
		Mode: ModeRate, Rate: 250, Requests: 500, MaxInflight: 1, Workload: WorkloadSpec{Kind: KindAPI}, Clock: clk,
		Doer: &fakeDoer{clock: clk, latency: func(int) time.Duration { return 0 }},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Requests != 500 || res.Summary.DurationSec != 1.996 {
		t.Errorf("500 requests at 250/s: %d requests in %.4f s, want 500 in 1.996 s (the last due at 499/250)", res.Summary.Requests, res.Summary.DurationSec)
	}
}

// TestStalledTargetCountsFromIntendedTime: the target stalls 1 s on the first
// request of a 100 req/s schedule. The requests due during the stall go out late
// and their latency is counted from when they were due, not from when they were
// sent: a tool with coordinated omission would report 1 ms for them.
func TestStalledTargetCountsFromIntendedTime(t *testing.T) {
	clk := newFakeClock()
	var records bytes.Buffer
	res, err := Run(context.Background(), Config{
		Mode: ModeRate, Rate: 100, Requests: 200, MaxInflight: 1, Workload: WorkloadSpec{Kind: KindAPI}, Clock: clk, Records: &records,
		Doer: &fakeDoer{clock: clk, latency: func(n int) time.Duration {
			if n == 0 {
				return time.Second
			}
			return time.Millisecond
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	recs := readCSV(t, records.Bytes())
	// Request k (k >= 1) is due at 10k ms but starts when the one before ends, at
	// 1000 + (k-1) ms, and ends 1 ms later: latency 1000 - 9k ms, until the
	// schedule catches up at k = 112 (due 1120 ms, previous ends at 1111 ms).
	for k, r := range recs {
		var want time.Duration
		switch {
		case k == 0:
			want = time.Second
		case k < 112:
			want = time.Duration(1000-9*k) * time.Millisecond
		default:
			want = time.Millisecond
		}
		if r.Latency != want {
			t.Fatalf("request %d: latency %s, want %s (start %s, intended %s)", k, r.Latency, want, r.Start, r.Intended)
		}
	}
	s := res.Summary
	// Request k starts 999 - 9k ms behind schedule: late for k = 1..110; request
	// 111 (due 1110 ms) starts exactly on time.
	if s.LateSends != 110 || s.MaxLagMs != 990 {
		t.Errorf("late sends %d (worst lag %.1f ms), want 110 (990 ms)", s.LateSends, s.MaxLagMs)
	}
	for k, r := range recs {
		if want := k >= 1 && k <= 110; r.Waited != want {
			t.Fatalf("request %d: waited %v, want %v", k, r.Waited, want)
		}
	}
	// The tail shows the stall: the slowest tenth of requests waited it out.
	if s.Latency.P90 < 100 || s.Latency.Max < 999 {
		t.Errorf("latency %+v does not show the stall", s.Latency)
	}
}

func TestClosedLoopOnFakeClock(t *testing.T) {
	clk := newFakeClock()
	res, err := Run(context.Background(), Config{
		Mode: ModeSequential, Requests: 50, Targets: []string{"a", "b", "c"}, Balancer: BalancerSpec{Kind: BalanceRoundRobin},
		Workload: WorkloadSpec{Kind: KindBurn, Burn: Burn{CPU: 5 * time.Millisecond}}, Clock: clk,
		Doer: &fakeDoer{clock: clk, latency: func(int) time.Duration { return 5 * time.Millisecond }},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	// Back to back: 50 x 5 ms = 250 ms, 200 req/s, every instance a third.
	if s.Requests != 50 || s.DurationSec != 0.25 || s.ThroughputRPS != 200 || s.SameInstanceRate != 0 {
		t.Errorf("summary %+v", s)
	}
	if s.PerInstance["i0"] != 17 || s.PerInstance["i1"] != 17 || s.PerInstance["i2"] != 16 {
		t.Errorf("per instance %v, want 17/17/16", s.PerInstance)
	}
}

// TestImageHonoursDuration: an image load bounded by time stops when the time is
// up, with the tiles it did, and says the image is incomplete.
func TestImageHonoursDuration(t *testing.T) {
	clk := newFakeClock()
	res, err := Run(context.Background(), Config{
		Mode: ModeImage, Workers: 1, Duration: time.Second, NoVerify: true, Clock: clk,
		Workload: WorkloadSpec{Kind: KindTile, Tiles: TileSet{Kind: TilesSample, Sample: 100}},
		Doer:     &fakeDoer{clock: clk, latency: func(int) time.Duration { return 100 * time.Millisecond }},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Requests != 10 || s.Image == nil || s.Image.Tiles != 100 || s.Image.Checksum != "" {
		t.Errorf("1 s of 100 ms tiles: %d requests, image %+v; want 10 and no checksum", s.Requests, s.Image)
	}
}

// TestOnOffOpenLoopOnFakeClock: with a rate, an on/off source sends Poisson
// arrivals while on (here always), each due at its own time.
func TestOnOffOpenLoopOnFakeClock(t *testing.T) {
	clk := newFakeClock()
	var records bytes.Buffer
	res, err := Run(context.Background(), Config{
		Mode: ModeOnOff, Sources: 1, OnMean: time.Hour, OffMean: time.Millisecond, Rate: 100, Duration: 10 * time.Second,
		Workload: WorkloadSpec{Kind: KindAPI}, Clock: clk, Records: &records,
		Doer: &fakeDoer{clock: clk, latency: func(int) time.Duration { return 0 }},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := res.Summary.Requests
	if n < 900 || n > 1100 {
		t.Fatalf("%d requests in 10 s at 100/s", n)
	}
	recs := readCSV(t, records.Bytes())
	due := map[time.Duration]bool{}
	for _, r := range recs {
		// Sends run in goroutines while the source sleeps on: on a fake clock
		// they may end later than due, never earlier.
		if r.Intended >= 10*time.Second || r.Latency < 0 || r.Start < r.Intended {
			t.Fatalf("record %+v", r)
		}
		due[r.Intended] = true
	}
	if len(due) < len(recs)*9/10 {
		t.Errorf("%d distinct due times for %d requests: not a Poisson schedule", len(due), len(recs))
	}
	if _, err := Run(context.Background(), Config{Mode: ModeOnOff, Sources: 1, OnMean: time.Second, OffMean: time.Second, Rate: -1, Duration: time.Second, Targets: []string{"http://x"}}); err == nil || !strings.Contains(err.Error(), "rate -1") {
		t.Error("a negative rate was accepted")
	}
}
