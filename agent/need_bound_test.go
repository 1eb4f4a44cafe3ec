package agent

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/testenv"
)

// TestByNeedThrottlesExactlyAsTenMillisecond: whether a period throttles
// depends only on its sum and what carries over (Chunk.demand), so every
// chunk read by need must count exactly the throttled periods of the same
// chunk read every 10 ms, at every ladder point with and without a burst.
// The demands: seeded random bursty ones (bursty) at several burst rates,
// seeded on/off demand of several threads (threadsOnOff), and the
// recordings in testdata/demand; each read with the default hot settings,
// eager ones and cold ones (hot only up to the next grid instant: most
// periods read coarse).
func TestByNeedThrottlesExactlyAsTenMillisecond(t *testing.T) {
	testenv.Arithmetic(t)
	const n = 10*60*100 + 1
	type demand struct {
		name  string
		usage []time.Duration
	}
	var demands []demand
	for seed := uint64(11); seed <= 18; seed++ {
		p := []float64{0.01, 0.05, 0.15, 0.35}[seed%4]
		_, u := bursty(seed, n, p)
		demands = append(demands, demand{fmt.Sprintf("bursty-%d-%.2f", seed, p), u})
	}
	for seed := uint64(5); seed <= 8; seed++ {
		demands = append(demands, demand{fmt.Sprintf("threads-%d", seed), threadsOnOff(seed, n)})
	}
	files, err := filepath.Glob("testdata/demand/*.csv.gz")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/demand/*.csv.gz: %v", err)
	}
	for _, f := range files {
		demands = append(demands, demand{strings.TrimSuffix(filepath.Base(f), ".csv.gz"), tile(recordedGz(t, f), n)})
	}
	settings := []HotConfig{{}, {Margin: 0.05, Hold: 10 * time.Second}, {Margin: 0.001, Hold: time.Millisecond}}
	cfg := testConfig()
	for _, d := range demands {
		_, _, fine := summarise(cfg, nil, d.usage, nil)
		for _, h := range settings {
			h.defaults()
			t.Run(fmt.Sprintf("%s/margin=%.3f,hold=%s", d.name, h.Margin, h.Hold), func(t *testing.T) {
				_, share, coarse := summarise(cfg, &h, d.usage, nil)
				if len(fine) != len(coarse) {
					t.Fatalf("%d chunks by need, %d at 10 ms", len(coarse), len(fine))
				}
				points, bad := 0, 0
				// Not the last chunk: both ways of reading end it at the
				// same sample (summarise), but where work still waits at
				// the end of the samples its last period can count one
				// throttled period apart (bursty-14 read cold, at
				// 110-130m: 601 at 10 ms, 600 by need).
				eachPointPair(fine[:len(fine)-1], coarse, func(k int, fe, ce advise.Evaluation) {
					points++
					if ce.ThrottledPeriods != fe.ThrottledPeriods {
						bad++
						if bad <= 5 {
							t.Errorf("chunk %d, %dm burst %dm: %.0f periods throttled by need, %.0f at 10 ms", k, fe.LimitMilli, fe.BurstMilli, ce.ThrottledPeriods, fe.ThrottledPeriods)
						}
					}
				})
				if bad > 5 {
					t.Errorf("... %d points of %d differ in all", bad, points)
				}
				t.Logf("read %.1f%% of the instants; %d chunk points compared", share*100, points)
			})
		}
	}
}

// TestFrontLoadKeepsWithinBound: a coarse interval's work is front-loaded
// at the chunk's parallelism bound, never faster (the replay would serve it
// faster than the group can run), from the interval's start.
func TestFrontLoadKeepsWithinBound(t *testing.T) {
	cfg := testConfig()
	s := NewSummary(cfg)
	var chunks []*Chunk
	add := func(at, usage time.Duration) {
		if c := s.Add(at, usage); c != nil {
			chunks = append(chunks, c)
		}
	}
	// One thread: 10 s read every 10 ms at 60% of a CPU (the bound: 1),
	// then read only on the grid at 60 ms of work per 100 ms.
	var u time.Duration
	for i := 0; i <= 1000; i++ {
		add(time.Duration(i)*10*time.Millisecond, u)
		u += 6 * time.Millisecond
	}
	for i := 1001; i <= 6000; i++ {
		at := time.Duration(i) * 10 * time.Millisecond
		u += 6 * time.Millisecond
		if cfg.OnGrid(at, 0) {
			add(at, u)
		}
	}
	chunks = append(chunks, s.Flush())
	c := chunks[0]
	if c.cores != 1 {
		t.Fatalf("parallelism bound %d, want 1", c.cores)
	}
	d, _ := c.demand(cfg)
	fine := cfg.Period / time.Duration(cfg.Phases)
	steps := 0
	for i := 1; i < len(d.At); i++ {
		dt, du := d.At[i]-d.At[i-1], d.Usage[i]-d.Usage[i-1]
		if float64(du) > float64(dt)*float64(c.cores)+1 {
			t.Fatalf("interval %d (%s at %s): %s of work, above %d CPU", i, dt, d.At[i], du, c.cores)
		}
		if dt == fine && du == fine*time.Duration(c.cores) {
			steps++
		}
	}
	// Each coarse period (60 ms of work) is six full 10 ms steps at one
	// CPU from its start, then idle.
	if want := 6 * (6000 - 1000) / 10; steps < want {
		t.Errorf("%d full front-loaded steps, want at least %d", steps, want)
	}
}
