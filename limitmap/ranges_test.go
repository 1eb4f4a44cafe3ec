package limitmap

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseLimitRange(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int64
		err  string
	}{
		{in: "100m:1:10", want: []int64{100, 200, 300, 400, 500, 600, 700, 800, 900, 1000}},
		{in: "250m:250m:1", want: []int64{250}},
		{in: "0.5:2:4", want: []int64{500, 1000, 1500, 2000}},
		{in: " 1 : 3 : 3 ", want: []int64{1000, 2000, 3000}},
		{in: "100m:1", err: "want FROM:TO:STEPS"},
		{in: "100m:1:10:2", err: "want FROM:TO:STEPS"},
		{in: "100m:1:0", err: "STEPS"},
		{in: "100m:1:x", err: "STEPS"},
		{in: "100m:1:101", err: "from 1 to 100"},
		{in: "1:100m:3", err: "FROM is above TO"},
		{in: "0:1:3", err: "at least 1m"},
		{in: "abc:1:3", err: "cpu quantity"},
		{in: "100m:5000:3", err: "more than 4096 CPUs"},
		{in: "100m:1:1", err: "one step needs FROM equal to TO"},
		{in: "1:1:3", err: "FROM equals TO"},
		{in: "1m:3m:5", err: "give at most 3"},
	} {
		got, err := ParseLimitRange(c.in)
		check(t, c.in, got, c.want, err, c.err)
	}
}

func TestParseRateWorkersBurstRanges(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []float64
		err  string
	}{
		{in: "20:200:10", want: []float64{20, 40, 60, 80, 100, 120, 140, 160, 180, 200}},
		{in: "0.5:1.5:3", want: []float64{0.5, 1, 1.5}},
		{in: "0:100:3", err: "above 0"},
		{in: "-1:100:3", err: "rate"},
		{in: "10:inf:3", err: "rate"},
		{in: "10:2e6:3", err: "1e+06"},
		{in: "200:20:3", err: "FROM is above TO"},
	} {
		got, err := ParseRateRange(c.in)
		check(t, "rate "+c.in, got, c.want, err, c.err)
	}
	for _, c := range []struct {
		in   string
		want []int64
		err  string
	}{
		{in: "1:8:8", want: []int64{1, 2, 3, 4, 5, 6, 7, 8}},
		{in: "2:8:4", want: []int64{2, 4, 6, 8}},
		{in: "1:4:8", err: "give at most 4"},
		{in: "0:4:2", err: "from 1 to 4096"},
		{in: "1.5:4:2", err: "whole number"},
	} {
		got, err := ParseWorkersRange(c.in)
		check(t, "workers "+c.in, got, c.want, err, c.err)
	}
	for _, c := range []struct {
		in   string
		want []time.Duration
		err  string
	}{
		{in: "0:400ms:5", want: []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 400 * time.Millisecond}},
		{in: "0:1us:3", err: "closer than a microsecond"},
		{in: "0:fast:3", err: "not a duration"},
		{in: "-1ms:4ms:3", err: "burst -1ms"},
	} {
		got, err := ParseBurstRange(c.in)
		check(t, "burst "+c.in, got, c.want, err, c.err)
	}
}

func check[T comparable](t *testing.T, in string, got, want []T, err error, wantErr string) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("%s: %v", in, err)
	case wantErr != "" && err == nil:
		t.Errorf("%s: got %v, want an error with %q", in, got, wantErr)
	case wantErr != "" && !strings.Contains(err.Error(), wantErr):
		t.Errorf("%s: error %q, want %q in it", in, err, wantErr)
	case wantErr != "" && strings.Contains(err.Error(), "\n"):
		t.Errorf("%s: error %q is more than one line", in, err)
	case wantErr == "" && !slices.Equal(got, want):
		t.Errorf("%s: got %v, want %v", in, got, want)
	}
}

// TestApplyNamesTheRange: Apply's errors are *RangeError naming the range
// at fault ("" for a second axis missing or given twice), and ErrRange.
func TestApplyNamesTheRange(t *testing.T) {
	for _, tt := range []struct {
		r    Ranges
		want string
	}{
		{Ranges{Rate: "1:2:2"}, "limit"},
		{Ranges{Limit: "1m:2:abc", Rate: "1:2:2"}, "limit"},
		{Ranges{Limit: "100m:1:3"}, ""},
		{Ranges{Limit: "100m:1:3", Rate: "1:2:2", Workers: "1:2:2"}, ""},
		{Ranges{Limit: "100m:1:3", Rate: "2:1:2"}, "rate"},
		{Ranges{Limit: "100m:1:3", Workers: "0:4:2"}, "workers"},
		{Ranges{Limit: "100m:1:3", Burst: "0:x:3"}, "burst"},
	} {
		var opt Options
		err := tt.r.Apply(&opt)
		var re *RangeError
		if !errors.As(err, &re) || re.Range != tt.want || !errors.Is(err, ErrRange) {
			t.Errorf("%+v: %v, want a RangeError on %q", tt.r, err, tt.want)
		}
	}
	var opt Options
	if err := (Ranges{Limit: "100m:1:3", Rate: "1:2:2"}).Apply(&opt); err != nil {
		t.Errorf("good ranges: %v", err)
	}
}
