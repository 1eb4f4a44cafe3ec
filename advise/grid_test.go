package advise

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/cfs/cfstest"
)

// TestBadPoint checks that a point the kernel would refuse, and demand
// shorter than a period, are one-line errors that name what is wrong.
func TestBadPoint(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name string
		err  func() error
		want string
	}{
		{"limit below 1 ms of quota", func() error { return Point{LimitMilli: 5, Period: 100 * ms}.Check() }, "quota under 1 ms"},
		{"burst above the quota", func() error { return Point{LimitMilli: 300, BurstMilli: 400, Period: 100 * ms}.Check() }, "burst above the quota"},
		{"duration shorter than a period", func() error {
			_, err := Evaluate(demandOf(50*ms, constant(0.5)), []Point{{300, 0, 100 * ms}}, Options{})
			return err
		}, "less than one period"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			if err == nil {
				t.Fatalf("no error, want one with %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want one line containing %q", err, tc.want)
			}
		})
	}
	if _, err := Evaluate(demandOf(50*ms, constant(0.5)), []Point{{300, 0, 100 * ms}}, Options{}); !errors.Is(err, cfs.ErrTooShort) {
		t.Errorf("short demand: %v, want cfs.ErrTooShort", err)
	}
}

// demandOf samples a demand given as cores over time every 10 ms for span.
func demandOf(span time.Duration, cores func(t time.Duration) float64) *Demand {
	return cfs.FromSamples(cfstest.Curve(span, cores))
}

var constant = cfstest.Constant

// TestEvaluateSharesUnthrottledReplays checks Evaluate's shortcut: points
// whose quota covers every period replay once per phase, and each gets what
// its own replay would give.
func TestEvaluateSharesUnthrottledReplays(t *testing.T) {
	ms := time.Millisecond
	// A burst of 1 core for 50 ms every second over 0.1 cores: periods of 5
	// to 50 ms of work.
	d := demandOf(20*time.Second, func(t time.Duration) float64 {
		if t%time.Second < 50*ms {
			return 1
		}
		return 0.1
	})
	// Largest first, so a wrong shortcut would hand a throttling point the
	// shared result.
	points := []Point{{2000, 1000, 100 * ms}, {900, 0, 100 * ms}, {600, 600, 100 * ms}, {600, 0, 100 * ms}, {400, 0, 100 * ms}, {300, 0, 100 * ms}}
	all, err := Evaluate(d, points, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range points {
		one, err := Evaluate(d, []Point{p}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if all[i] != one[0] {
			t.Errorf("%s: in a grid %+v, alone %+v", p, all[i], one[0])
		}
	}
	if all[5].ThrottledRatio == 0 || all[0].ThrottledRatio != 0 {
		t.Errorf("300m throttled %.3f, 2 CPUs throttled %.3f: want some, then none", all[5].ThrottledRatio, all[0].ThrottledRatio)
	}
}
