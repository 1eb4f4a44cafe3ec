package loadgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Arrivals is an open-loop schedule: the intended send time of each request,
// as an offset from the start of the load. It is a pure function of the request
// number, free of real time, so it can be tested exactly.
type Arrivals interface {
	// Next returns the intended offset of the next request.
	Next() time.Duration
}

// ConstantArrivals sends at a fixed rate: request i (from 0) is due at i/rate.
type ConstantArrivals struct {
	rate float64
	i    int64
}

// NewConstant returns a constant-rate schedule of rate requests per second.
func NewConstant(rate float64) (*ConstantArrivals, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("rate %g: must be a positive number of requests per second", rate)
	}
	return &ConstantArrivals{rate: rate}, nil
}

// Next implements Arrivals. Offsets are computed from the index, not summed, so
// rounding never accumulates.
func (c *ConstantArrivals) Next() time.Duration {
	// i*1e9/rate rounded to the nanosecond: exact whenever the true value is a
	// whole number of nanoseconds (1e9/rate first would round twice).
	d := time.Duration(math.Round(float64(c.i) * float64(time.Second) / c.rate))
	c.i++
	return d
}

// PoissonArrivals sends as a Poisson process: gaps are exponential with mean
// 1/rate, drawn from a seeded generator.
type PoissonArrivals struct {
	rate float64
	rng  *rand.Rand
	t    float64 // seconds
}

// NewPoisson returns a Poisson schedule of rate requests per second on average.
func NewPoisson(rate float64, seed uint64) (*PoissonArrivals, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("rate %g: must be a positive number of requests per second", rate)
	}
	return &PoissonArrivals{rate: rate, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}, nil
}

// Next implements Arrivals. The first request is due at 0.
func (p *PoissonArrivals) Next() time.Duration {
	d := time.Duration(p.t * float64(time.Second))
	p.t += p.rng.ExpFloat64() / p.rate
	return d
}
