package limitmap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
)

// ErrRange marks a range that cannot be read, or a missing or extra axis:
// bad input, as ErrNoReference and ErrAxis are.
var ErrRange = errors.New("map range")

// RangeError is a range of Ranges that cannot be read (Range is "limit",
// "rate", "workers" or "burst"), or a second axis that is missing or given
// twice (Range ""). It is ErrRange; a command line says which of its
// options carried the range.
type RangeError struct {
	Range string
	Err   error
}

func (e *RangeError) Error() string { return e.Err.Error() }

// Unwrap gives ErrRange and the range's own error.
func (e *RangeError) Unwrap() []error { return []error{ErrRange, e.Err} }

// Ranges are a map's grid as a user writes it, each FROM:TO:STEPS: the
// limit per instance and one second axis (Rate for open-loop loads,
// Workers for closed loops, or Burst).
type Ranges struct {
	Limit, Rate, Workers, Burst string
}

// Apply parses the ranges into opt's Limits, Axis and Loads. Its errors
// are *RangeError, naming the range at fault.
func (r Ranges) Apply(opt *Options) error {
	if r.Limit == "" {
		return &RangeError{"limit", errors.New("a limit range FROM:TO:STEPS is needed, such as 100m:1:10")}
	}
	var err error
	if opt.Limits, err = ParseLimitRange(r.Limit); err != nil {
		return &RangeError{"limit", err}
	}
	set := 0
	for _, s := range []string{r.Rate, r.Workers, r.Burst} {
		if s != "" {
			set++
		}
	}
	if set != 1 {
		return &RangeError{"", errors.New("give one second axis: a rate range (open loop), a workers range (closed loop) or a burst range")}
	}
	opt.Loads = nil
	switch {
	case r.Rate != "":
		opt.Axis = AxisRate
		if opt.Loads, err = ParseRateRange(r.Rate); err != nil {
			return &RangeError{"rate", err}
		}
	case r.Workers != "":
		opt.Axis = AxisWorkers
		w, err := ParseWorkersRange(r.Workers)
		if err != nil {
			return &RangeError{"workers", err}
		}
		for _, v := range w {
			opt.Loads = append(opt.Loads, float64(v))
		}
	default:
		opt.Axis = AxisBurst
		b, err := ParseBurstRange(r.Burst)
		if err != nil {
			return &RangeError{"burst", err}
		}
		for _, d := range b {
			opt.Loads = append(opt.Loads, float64(d.Microseconds())/1000)
		}
	}
	return nil
}

// DrawOptions say where a map goes and which of its cells are measured.
type DrawOptions struct {
	// Dir receives map.json, report.html and the measured points' results.
	Dir string
	// Measure, if Points > 0, runs that many cells on real cgroups (its Dir
	// is set to Dir).
	Measure MeasureOptions
	// Out receives what is mapped, then the headline, the grid and where
	// the files are; Log the progress (nil: neither).
	Out, Log io.Writer
}

// Draw simulates the map of e, measures the cells asked for, writes
// Dir/map.json and Dir/report.html, and prints the headline (Headline) and
// the grid (WriteText). The map is written whatever the measuring did: it
// holds the points measured before a failure, and Draw returns it with the
// measuring's error. A nil map means nothing was written.
func Draw(ctx context.Context, e *experiment.Experiment, opt Options, d DrawOptions) (*Map, error) {
	out, log := d.Out, d.Log
	if out == nil {
		out = io.Discard
	}
	if log == nil {
		log = io.Discard
	}
	if err := os.MkdirAll(d.Dir, 0o755); err != nil {
		return nil, err
	}
	repeats := opt.Repeats
	if repeats <= 0 {
		repeats = DefaultRepeats
	}
	started := time.Now()
	m, err := Simulate(ctx, e, opt)
	if err != nil {
		return nil, err
	}
	// How it went goes to the log (a bad option is then one line there);
	// the answer is out's first line.
	fmt.Fprintf(log, "mapped %s: %d limits x %d %s, %d runs per cell on %d simulated cores: %d cells and %d references in %.1f s (%d at once)\n",
		e.Metadata.Name, len(opt.Limits), len(opt.Loads), opt.Axis, repeats, opt.Cores, len(m.Cells), len(m.References), time.Since(started).Seconds(), max(opt.Parallel, 1))
	var measureErr error
	if d.Measure.Points > 0 {
		mo := d.Measure
		mo.Dir = d.Dir
		measureErr = Measure(ctx, e, m, opt, mo)
		fmt.Fprintf(log, "measured %d points; %.1f s in all\n", len(m.Measured), time.Since(started).Seconds())
	}
	jsonPath, htmlPath := filepath.Join(d.Dir, "map.json"), filepath.Join(d.Dir, "report.html")
	if err := record.WriteJSON(jsonPath, m); err != nil {
		return nil, err
	}
	if err := record.WriteFileAtomic(htmlPath, func(fh *os.File) error { return WriteHTML(fh, m) }); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "%s\n\n", Headline(m)) // the answer, first
	WriteText(out, m)
	fmt.Fprintf(out, "\nmap: %s\nreport: %s\n", jsonPath, htmlPath)
	return m, measureErr
}
