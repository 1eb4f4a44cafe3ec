package cgroup

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// UsageSample is the cumulative CPU usage of each sampled group at one instant.
type UsageSample struct {
	// At is the time since the sampler started.
	At time.Duration
	// Usage holds each group's cumulative CPU time, in the order given.
	Usage []time.Duration
	// Throttled holds each group's cumulative count of throttled periods
	// (nr_throttled), so a report can mark the periods where they happened.
	Throttled []uint64
	// Periods holds each group's cumulative count of periods (nr_periods):
	// where it moves, one of the group's own periods ended (PeakTracker).
	Periods []uint64
	// Missed is how many sampling instants were skipped so far because a
	// sample came more than half an interval late (Clock).
	Missed int64
}

// openUsage opens a group's counters (UsageCounter): a sample is one pread
// per file and no allocation, so sampling 16 groups every 10 ms costs little.
func openUsage(g *Group) (*UsageCounter, error) {
	acct := g.Dirs["cpuacct"]
	if g.m.version == "v2" {
		acct = g.Dirs["cpu"]
	}
	return OpenUsage(g.m.version, g.Dirs["cpu"], acct)
}

// Sampler reads the CPU usage of groups at a fixed interval.
type Sampler struct {
	files []*UsageCounter
}

// NewSampler opens the usage counters of the groups.
func NewSampler(groups []*Group) (*Sampler, error) {
	s := &Sampler{}
	for _, g := range groups {
		u, err := openUsage(g)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("group %s: %w", g.Name, err)
		}
		s.files = append(s.files, u)
	}
	return s, nil
}

// Sample reads every group's usage once into dst (len(groups) long), and,
// when throttled and periods are not nil, its counts of throttled periods and
// of periods.
func (s *Sampler) Sample(dst []time.Duration, throttled, periods []uint64) error {
	for i, u := range s.files {
		r, err := u.ReadUsage(throttled != nil || periods != nil)
		if err != nil {
			return err
		}
		dst[i] = r.Usage()
		if throttled != nil {
			throttled[i] = r.ThrottledPeriods
		}
		if periods != nil {
			periods[i] = r.Periods
		}
	}
	return nil
}

// Run samples every interval until ctx ends and calls emit with each
// sample, from this goroutine (Loop; it is not locked to its OS thread:
// each wait sleeps in clock_nanosleep on whichever thread runs it): the
// samples stay on the interval's grid, and instants a late sample skipped
// are counted in UsageSample.Missed, not queued. It returns the first read
// error.
func (s *Sampler) Run(ctx context.Context, interval time.Duration, emit func(UsageSample)) error {
	var err error
	Loop(ctx, interval, func(at time.Duration, missed int64) bool {
		n := len(s.files)
		u := UsageSample{At: at, Usage: make([]time.Duration, n), Throttled: make([]uint64, n), Periods: make([]uint64, n), Missed: missed}
		if err = s.Sample(u.Usage, u.Throttled, u.Periods); err != nil {
			return false
		}
		emit(u)
		return true
	})
	return err
}

// Close closes the counters.
func (s *Sampler) Close() error {
	var errs []error
	for _, u := range s.files {
		errs = append(errs, u.Close())
	}
	return errors.Join(errs...)
}
