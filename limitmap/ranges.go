package limitmap

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/units"
)

// MaxSteps bounds the points of one axis: a 100 x 100 map is 10,000
// simulated cells, more than anyone reads.
const MaxSteps = 100

// splitRange cuts FROM:TO:STEPS and checks STEPS.
func splitRange(what, s string) (from, to string, steps int, err error) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 3 {
		return "", "", 0, fmt.Errorf("%s range %q: want FROM:TO:STEPS, such as %s", what, s, example(what))
	}
	n, err := strconv.Atoi(strings.TrimSpace(parts[2]))
	if err != nil || n < 1 || n > MaxSteps {
		return "", "", 0, fmt.Errorf("%s range %q: STEPS %q: want a whole number from 1 to %d", what, s, parts[2], MaxSteps)
	}
	return parts[0], parts[1], n, nil
}

func example(what string) string {
	switch what {
	case "limit":
		return "100m:1:10"
	case "rate":
		return "20:200:10"
	case "workers":
		return "1:8:8"
	}
	return "0:400ms:5"
}

// spaced returns steps values from lo to hi, evenly spaced (lo alone for one
// step, which needs lo == hi).
func spaced(what, s string, lo, hi float64, steps int) ([]float64, error) {
	if hi < lo {
		return nil, fmt.Errorf("%s range %q: FROM is above TO", what, s)
	}
	if steps == 1 {
		if hi != lo {
			return nil, fmt.Errorf("%s range %q: one step needs FROM equal to TO", what, s)
		}
		return []float64{lo}, nil
	}
	if hi == lo {
		return nil, fmt.Errorf("%s range %q: FROM equals TO: give 1 step, or a wider range", what, s)
	}
	out := make([]float64, steps)
	for i := range out {
		out[i] = lo + (hi-lo)*float64(i)/float64(steps-1)
	}
	return out, nil
}

// ParseLimitRange parses a range of per-instance CPU limits, FROM:TO:STEPS
// with Kubernetes quantities ("100m:2:10"), into millicores, evenly spaced
// and rounded to whole millicores. Zero (no limit) is refused, and so are
// steps that round to the same millicore.
func ParseLimitRange(s string) ([]int64, error) {
	a, b, n, err := splitRange("limit", s)
	if err != nil {
		return nil, err
	}
	lo, _, err := units.ParseMilliCPU(a)
	if err != nil {
		return nil, fmt.Errorf("limit range %q: FROM: %w", s, err)
	}
	hi, _, err := units.ParseMilliCPU(b)
	if err != nil {
		return nil, fmt.Errorf("limit range %q: TO: %w", s, err)
	}
	if lo < 1 {
		return nil, fmt.Errorf("limit range %q: FROM must be at least 1m (a limit of 0 is no limit)", s)
	}
	v, err := spaced("limit", s, float64(lo), float64(hi), n)
	if err != nil {
		return nil, err
	}
	return distinctInts("limit", s, v)
}

// ParseRateRange parses a range of request rates, FROM:TO:STEPS in requests
// per second ("20:200:10"), read by units.ParseRate; zero is refused.
func ParseRateRange(s string) ([]float64, error) {
	a, b, n, err := splitRange("rate", s)
	if err != nil {
		return nil, err
	}
	lo, err := units.ParseRate(a)
	if err != nil {
		return nil, fmt.Errorf("rate range %q: FROM: %w", s, err)
	}
	hi, err := units.ParseRate(b)
	if err != nil {
		return nil, fmt.Errorf("rate range %q: TO: %w", s, err)
	}
	if lo == 0 {
		return nil, fmt.Errorf("rate range %q: FROM must be above 0 requests per second", s)
	}
	return spaced("rate", s, lo, hi, n)
}

// ParseWorkersRange parses a range of closed-loop workers, FROM:TO:STEPS
// ("1:8:8"), rounded to whole workers; steps that round to the same count
// are refused.
func ParseWorkersRange(s string) ([]int64, error) {
	a, b, n, err := splitRange("workers", s)
	if err != nil {
		return nil, err
	}
	var lohi [2]int64
	for i, p := range []string{a, b} {
		v, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil || v < 1 || v > loadgen.MaxWorkers {
			return nil, fmt.Errorf("workers range %q: %q: want a whole number of workers from 1 to %d", s, p, loadgen.MaxWorkers)
		}
		lohi[i] = v
	}
	v, err := spaced("workers", s, float64(lohi[0]), float64(lohi[1]), n)
	if err != nil {
		return nil, err
	}
	return distinctInts("workers", s, v)
}

// ParseBurstRange parses a range of burst allowances, FROM:TO:STEPS with
// durations ("0:400ms:5"), rounded to whole microseconds (the kernel's unit).
func ParseBurstRange(s string) ([]time.Duration, error) {
	a, b, n, err := splitRange("burst", s)
	if err != nil {
		return nil, err
	}
	var lohi [2]time.Duration
	for i, p := range []string{a, b} {
		d, err := units.ParseDuration(p)
		if err != nil {
			return nil, fmt.Errorf("burst range %q: %w", s, err)
		}
		if err := units.CheckDuration("burst", d, 0, units.MaxCPUs*time.Second); err != nil {
			return nil, fmt.Errorf("burst range %q: %w", s, err)
		}
		lohi[i] = d
	}
	v, err := spaced("burst", s, float64(lohi[0]), float64(lohi[1]), n)
	if err != nil {
		return nil, err
	}
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(math.Round(x/1e3)) * time.Microsecond
		if i > 0 && out[i] == out[i-1] {
			return nil, fmt.Errorf("burst range %q: steps closer than a microsecond: give fewer steps", s)
		}
	}
	return out, nil
}

func distinctInts(what, s string, v []float64) ([]int64, error) {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(math.Round(x))
		if i > 0 && out[i] == out[i-1] {
			return nil, fmt.Errorf("%s range %q: %d steps do not fit between FROM and TO: give at most %d", what, s, len(v), int64(math.Round(v[len(v)-1]-v[0]))+1)
		}
	}
	return out, nil
}
