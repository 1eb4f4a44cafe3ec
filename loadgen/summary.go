package loadgen

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/throttlelab/throttlelab/workload"
)

// Totals describes a finished load. It is written as summary.json.
type Totals struct {
	Mode     Mode     `json:"mode"`
	Request  string   `json:"request"`
	Targets  []string `json:"targets"`
	Balancer string   `json:"balancer"`
	Arrivals string   `json:"arrivals,omitempty"`
	RateRPS  float64  `json:"rate_rps,omitempty"`
	Seed     uint64   `json:"seed"`
	// Requests counts every request sent; OK those that succeeded.
	Requests int64            `json:"requests"`
	OK       int64            `json:"ok"`
	Errors   map[string]int64 `json:"errors"`
	// DurationSec runs from the start of the load to its end.
	DurationSec   float64 `json:"duration_sec"`
	ThroughputRPS float64 `json:"throughput_rps"`
	// Latency of successful requests, from their intended send time.
	Latency LatencySummary `json:"latency_ms"`
	// PerInstance counts requests by the X-Instance that answered.
	PerInstance map[string]int64 `json:"per_instance"`
	// SameInstanceRate is the fraction of consecutive requests (in the order
	// their targets were picked) that went to the same instance.
	SameInstanceRate float64 `json:"same_instance_rate"`
	// LateSends counts open-loop sends that had to wait for a free slot (the
	// in-flight limit) past their due time; MaxLagMs is the largest gap between
	// a request's due time and its send, whatever the cause (timer jitter too).
	LateSends int64         `json:"late_sends"`
	MaxLagMs  float64       `json:"max_lag_ms"`
	Steps     []StepSummary `json:"steps,omitempty"`
	Image     *ImageCheck   `json:"image,omitempty"`
	// Interrupted is set when the load was stopped before it finished.
	Interrupted bool `json:"interrupted"`
}

// LatencySummary holds latency statistics in milliseconds.
type LatencySummary struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99.9"`
	Max  float64 `json:"max"`
}

// StepSummary is one step of a ramp.
type StepSummary struct {
	Workers       int     `json:"workers"`
	Requests      int64   `json:"requests"`
	OK            int64   `json:"ok"`
	DurationSec   float64 `json:"duration_sec"`
	ThroughputRPS float64 `json:"throughput_rps"`
	P50Ms         float64 `json:"p50_ms"`
	P99Ms         float64 `json:"p99_ms"`
}

// ImageCheck says whether the tiles that came back are the right ones.
type ImageCheck struct {
	Tiles    int `json:"tiles"`
	Verified int `json:"verified"`
	Bad      int `json:"bad"`
	// Checksum is the image checksum of the received tiles, when all 26010 came
	// back right; Want is the catalogue's.
	Checksum string `json:"checksum,omitempty"`
	Want     string `json:"want,omitempty"`
	Match    bool   `json:"match"`
}

// Failed reports why the load should count as failed: tiles that were wrong, or
// an image that does not add up. Errors such as timeouts are measurements, not
// failures.
func (s *Totals) Failed() error {
	if s.Image == nil {
		if n := s.Errors[ErrBadTile]; n > 0 {
			return fmt.Errorf("%d tiles did not match the catalogue", n)
		}
		return nil
	}
	if s.Image.Bad > 0 {
		return fmt.Errorf("%d tiles did not match the catalogue", s.Image.Bad)
	}
	if s.Image.Want != "" && s.Image.Checksum != "" && !s.Image.Match {
		return fmt.Errorf("image checksum %s, want %s", s.Image.Checksum, s.Image.Want)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func latencySummary(h *hdrhistogram.Histogram) LatencySummary {
	if h.TotalCount() == 0 {
		return LatencySummary{}
	}
	q := func(p float64) float64 { return float64(h.ValueAtQuantile(p)) / 1000 }
	return LatencySummary{Mean: h.Mean() / 1000, P50: q(50), P90: q(90), P99: q(99), P999: q(99.9), Max: float64(h.Max()) / 1000}
}

func (r *runner) summary(elapsed time.Duration) *Totals {
	s := summarize(r.cfg, r.rec, elapsed)
	if r.cfg.Mode == ModeImage {
		r.rec.mu.Lock()
		defer r.rec.mu.Unlock()
		ic := &ImageCheck{Tiles: len(r.src.reqs), Bad: int(r.rec.errors[ErrBadTile])}
		for _, ok := range r.received {
			if ok {
				ic.Verified++
			}
		}
		if ic.Tiles == workload.TileCount {
			ic.Want = workload.ImageSHA256
			if sum, ok := r.imageChecksum(); ok {
				ic.Checksum, ic.Match = sum, sum == ic.Want
			}
		}
		s.Image = ic
	}
	return s
}

// summarize sums up what a recorder collected.
func summarize(c Config, rec *recorder, elapsed time.Duration) *Totals {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	s := &Totals{
		Mode: c.Mode, Request: requestString(c.Workload), Targets: c.Targets, Balancer: c.Balancer.String(), Seed: c.Seed,
		Requests: rec.n, OK: rec.ok, Errors: maps.Clone(rec.errors), DurationSec: elapsed.Seconds(),
		Latency: latencySummary(rec.all), PerInstance: maps.Clone(rec.instances), LateSends: rec.late, MaxLagMs: ms(rec.maxLate),
	}
	if c.Mode == ModeRate || c.Mode == ModeProbe {
		s.Arrivals, s.RateRPS = c.Arrivals, c.Rate
	}
	if elapsed > 0 {
		s.ThroughputRPS = float64(rec.ok) / elapsed.Seconds()
	}
	s.SameInstanceRate = rec.sameInstanceRate()
	if c.Mode == ModeRamp {
		for _, k := range slices.Sorted(maps.Keys(rec.steps)) {
			st := rec.steps[k]
			ss := StepSummary{Workers: st.workers, Requests: st.n, OK: st.ok, DurationSec: (st.end - st.start).Seconds()}
			if ss.DurationSec > 0 {
				ss.ThroughputRPS = float64(st.ok) / ss.DurationSec
			}
			l := latencySummary(st.hist)
			ss.P50Ms, ss.P99Ms = l.P50, l.P99
			s.Steps = append(s.Steps, ss)
		}
	}
	return s
}

// Collector turns the records of a load driven elsewhere (the simulator) into
// requests.csv, a histogram and a Summary, the same way Run does.
type Collector struct {
	cfg Config
	rec *recorder
}

// NewCollector checks cfg (targets may be names, not URLs) and writes the
// records to w (nil: none written).
func NewCollector(cfg Config, w io.Writer) (*Collector, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	rec, err := newRecorder(w)
	if err != nil {
		return nil, err
	}
	return &Collector{cfg: cfg, rec: rec}, nil
}

// Config is the checked configuration, with defaults filled in.
func (c *Collector) Config() Config { return c.cfg }

// Step starts ramp step number step, with workers workers, at offset at.
func (c *Collector) Step(step, workers int, at time.Duration) {
	c.rec.mu.Lock()
	c.rec.steps[step] = &stepAcc{hist: newHist(), workers: workers, start: at}
	c.rec.mu.Unlock()
}

// Add records one request.
func (c *Collector) Add(r *Record) { c.rec.add(r) }

// Finish flushes the records and sums up a load that took elapsed.
func (c *Collector) Finish(elapsed time.Duration) (*Result, error) {
	err := c.rec.flush()
	return &Result{Summary: summarize(c.cfg, c.rec, elapsed), Histogram: c.rec.all}, err
}

func requestString(w WorkloadSpec) string {
	switch w.Kind {
	case KindBurn:
		return "burn " + w.Burn.String()
	case KindAPI:
		return "api"
	}
	t := w.Tiles.String()
	if t == "" {
		t = string(TilesAll)
	}
	return "tile " + t
}

// WriteTable writes the summary as an aligned table for a terminal.
func (s *Totals) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	state := "done"
	if s.Interrupted {
		state = "INTERRUPTED: what was measured so far"
	}
	fmt.Fprintf(tw, "load\t%s, %s, %d target(s), balancer %s (%s)\n", s.Mode, s.Request, len(s.Targets), s.Balancer, state)
	errs := "none"
	if len(s.Errors) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(s.Errors)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, s.Errors[k]))
		}
		errs = strings.Join(parts, ", ")
	}
	fmt.Fprintf(tw, "requests\t%d ok of %d sent in %.2f s: %.1f req/s; errors: %s\n", s.OK, s.Requests, s.DurationSec, s.ThroughputRPS, errs)
	l := s.Latency
	fmt.Fprintf(tw, "latency\tmean %.2f ms  p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  p99.9 %.2f ms  max %.2f ms\n", l.Mean, l.P50, l.P90, l.P99, l.P999, l.Max)
	if s.Mode == ModeRate || s.Mode == ModeProbe {
		fmt.Fprintf(tw, "schedule\t%s at %g req/s; %d sends waited for the in-flight limit; worst lag behind schedule %.2f ms; latency counts from the due time\n", s.Arrivals, s.RateRPS, s.LateSends, s.MaxLagMs)
	}
	if len(s.PerInstance) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(s.PerInstance)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, s.PerInstance[k]))
		}
		fmt.Fprintf(tw, "instances\t%s; consecutive requests to the same instance: %.1f%%\n", strings.Join(parts, ", "), 100*s.SameInstanceRate)
	}
	if s.Image != nil {
		im := s.Image
		verdict := fmt.Sprintf("%d of %d tiles verified, %d wrong", im.Verified, im.Tiles, im.Bad)
		if im.Want != "" {
			switch {
			case im.Match:
				verdict += "; image checksum matches"
			case im.Checksum != "":
				verdict += "; image checksum MISMATCH"
			default:
				verdict += "; image incomplete, no checksum"
			}
		}
		fmt.Fprintf(tw, "image\t%s\n", verdict)
	}
	tw.Flush()
	if len(s.Steps) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "workers\trequests\treq/s\tp50 ms\tp99 ms\t")
		for _, st := range s.Steps {
			fmt.Fprintf(tw, "%d\t%d\t%.1f\t%.2f\t%.2f\t\n", st.Workers, st.Requests, st.ThroughputRPS, st.P50Ms, st.P99Ms)
		}
		tw.Flush()
	}
}
