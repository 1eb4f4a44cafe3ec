package cgroup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
}

// usageFile is one group's usage counter, kept open: a sample is one pread per
// group and no allocation, so sampling 16 groups every 10 ms costs little.
type usageFile struct {
	f   *os.File
	v2  bool // cpu.stat (usage_usec line) rather than cpuacct.usage (ns)
	buf []byte
	// stat is the v1 cpu.stat, for nr_throttled (on v2 it is f itself).
	stat    *os.File
	statBuf []byte
}

func openUsage(g *Group) (*usageFile, error) {
	if g.m.version == "v2" {
		f, err := os.Open(filepath.Join(g.Dirs["cpu"], "cpu.stat"))
		return &usageFile{f: f, v2: true, buf: make([]byte, 512)}, err
	}
	d, ok := g.Dirs["cpuacct"]
	if !ok {
		return nil, errors.New("the cpuacct controller is not mounted: no CPU usage on this cgroup v1 host")
	}
	f, err := os.Open(filepath.Join(d, "cpuacct.usage"))
	if err != nil {
		return nil, err
	}
	stat, err := os.Open(filepath.Join(g.Dirs["cpu"], "cpu.stat"))
	if err != nil {
		f.Close()
		return nil, err
	}
	return &usageFile{f: f, buf: make([]byte, 32), stat: stat, statBuf: make([]byte, 512)}, nil
}

// throttled reads nr_throttled from cpu.stat. On v2 it parses the buffer the
// last read() filled, as both counters live in the same file.
func (u *usageFile) throttled() (uint64, error) {
	b := u.buf
	if !u.v2 {
		n, err := u.stat.ReadAt(u.statBuf, 0)
		if n == 0 && err != nil {
			return 0, err
		}
		b = u.statBuf[:n]
	}
	const key = "nr_throttled "
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if bytes.HasPrefix(line, []byte(key)) {
			return parseUintPrefix(line[len(key):])
		}
	}
	return 0, errors.New("cpu.stat has no nr_throttled")
}

func (u *usageFile) read() (time.Duration, error) {
	// buf keeps what the last read returned, for throttled() on v2.
	u.buf = u.buf[:cap(u.buf)]
	n, err := u.f.ReadAt(u.buf, 0)
	if n == 0 && err != nil {
		return 0, err
	}
	u.buf = u.buf[:n]
	b := u.buf
	if !u.v2 {
		v, err := parseUintPrefix(b)
		return time.Duration(v), err
	}
	// "usage_usec N" is the first line of a v2 cpu.stat.
	const key = "usage_usec "
	if len(b) < len(key) || string(b[:len(key)]) != key {
		return 0, errors.New("cpu.stat does not start with usage_usec")
	}
	v, err := parseUintPrefix(b[len(key):])
	return time.Duration(v) * time.Microsecond, err
}

func parseUintPrefix(b []byte) (uint64, error) {
	var v uint64
	i := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		v = v*10 + uint64(b[i]-'0')
	}
	if i == 0 {
		return 0, fmt.Errorf("not a number: %q", b)
	}
	return v, nil
}

// Sampler reads the CPU usage of groups at a fixed interval.
type Sampler struct {
	files []*usageFile
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
// when throttled is not nil, its count of throttled periods.
func (s *Sampler) Sample(dst []time.Duration, throttled []uint64) error {
	for i, u := range s.files {
		v, err := u.read()
		if err != nil {
			return err
		}
		dst[i] = v
		if throttled != nil {
			if throttled[i], err = u.throttled(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Run samples every interval until ctx ends and calls emit with each sample, from
// this goroutine. Ticks the sampler could not keep up with are skipped, not
// queued, so the samples stay on the interval's grid.
func (s *Sampler) Run(ctx context.Context, interval time.Duration, emit func(UsageSample)) error {
	start := time.Now()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		u := UsageSample{At: time.Since(start), Usage: make([]time.Duration, len(s.files)), Throttled: make([]uint64, len(s.files))}
		if err := s.Sample(u.Usage, u.Throttled); err != nil {
			return err
		}
		emit(u)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Close closes the counters.
func (s *Sampler) Close() error {
	var errs []error
	for _, u := range s.files {
		if u != nil && u.f != nil {
			errs = append(errs, u.f.Close())
		}
		if u != nil && u.stat != nil {
			errs = append(errs, u.stat.Close())
		}
	}
	return errors.Join(errs...)
}
