package advise

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
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
