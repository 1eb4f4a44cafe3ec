package report

import (
	"errors"
	"io/fs"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/stats"
)

// Source is one results directory, as run or sim wrote it.
type Source struct {
	Dir string
	// Label tells sources apart in a comparison (the directory's name, or the
	// backend when a measured and a simulated run of one spec are compared).
	Label string
	Env   record.Env
	Spec  *experiment.Experiment
	// Runs are in the order they were made.
	Runs []*Run
	// Summary is the runs summed up (record.Summarize) with their 95%
	// intervals (Summary.AddIntervals, from the requests read here).
	Summary *record.ExperimentSummary
}

// Run is one run's data.
type Run struct {
	*record.Run
	// Requests holds what the report needs of each request, compactly: a
	// full log jam has 130,000 of them per config.
	Requests []Request
	// Groups are the run's sampled cgroups (instances, then neighbours).
	Groups []GroupUsage
}

// Request is one request as the report sees it (record.CompactRequest).
type Request = record.Request

// GroupUsage is one cgroup's samples: cumulative CPU time and throttled
// periods at each instant (10 ms apart).
type GroupUsage struct {
	Name      string
	At        []time.Duration
	Usage     []time.Duration
	Throttled []uint64
}

// AutoLabel names sources by their backend ("measured", "simulated") when
// they are one measurement and one simulation of the same experiment, the
// comparison sim --compare makes; otherwise they keep their directory names.
func AutoLabel(sources []*Source) {
	if len(sources) != 2 || sources[0].Spec.Metadata.Name != sources[1].Spec.Metadata.Name ||
		sources[0].Simulated() == sources[1].Simulated() {
		return
	}
	for _, s := range sources {
		s.Label = "measured"
		if s.Simulated() {
			s.Label = "simulated"
		}
	}
}

// Simulated reports whether the source came from the simulator.
func (s *Source) Simulated() bool { return s.Env.Backend == "sim" }

// Load reads a results directory. A run without summary.json (interrupted
// before it finished) is not in the directory: runs are renamed into place
// when complete.
func Load(dir string) (*Source, error) { return LoadHeld(dir, nil) }

// LoadHeld is Load taking the records and samples of the runs in held
// (matched by ID) from their record.Held instead of reading them back: what
// the runner hands over of the runs it has just made. The rest is read.
func LoadHeld(dir string, held []*record.Run) (*Source, error) {
	byID := map[string]*record.Held{}
	for _, r := range held {
		if r != nil && r.Held != nil {
			byID[r.ID] = r.Held
		}
	}
	spec, env, sums, err := record.ReadResults(dir)
	if err != nil {
		return nil, err
	}
	s := &Source{Dir: dir, Label: filepath.Base(filepath.Clean(dir)), Spec: spec, Env: env}
	// The runs are read on every CPU at once (parsing their records is
	// most of a report's time), in order.
	runs := make([]*Run, len(sums))
	smps := make([]*stats.Sample, len(sums))
	errs := make([]error, len(sums))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, rs := range sums {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if h := byID[rs.ID]; h != nil {
				runs[i], smps[i] = heldRun(rs, h)
				return
			}
			runs[i], smps[i], errs[i] = loadRun(record.RunIDDir(dir, rs.ID), rs)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err // the first run's in order, as when read one by one
		}
	}
	samples := map[string]*stats.Sample{}
	for i, rs := range sums {
		s.Runs = append(s.Runs, runs[i])
		samples[rs.ID] = smps[i]
	}
	s.Summary = record.Summarize(spec, sums)
	s.Summary.AddIntervals(samples)
	return s, nil
}

// loadRun reads a finished run's records and usage samples, and the
// sample of its latencies (record.LatencySample).
func loadRun(dir string, rs *record.Run) (*Run, *stats.Sample, error) {
	r := &Run{Run: rs}
	recs, err := record.ReadRequests(dir)
	if err != nil {
		return nil, nil, err
	}
	r.Requests = record.CompactRequests(recs)
	smp := record.LatencySample(recs)
	usage, err := record.ReadColumns(filepath.Join(dir, record.UsageFile))
	if err != nil {
		return nil, nil, err
	}
	thr, err := record.ReadColumns(filepath.Join(dir, record.ThrottledFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) { // older results have no throttled.csv
		return nil, nil, err
	}
	if !thr.SampledAt(usage.At) {
		thr = nil // none, or sampled at other times: no throttled column
	}
	for i, name := range usage.Names {
		g := GroupUsage{Name: name, At: usage.At, Usage: make([]time.Duration, len(usage.At))}
		for j := range usage.At {
			g.Usage[j] = time.Duration(usage.Cols[i][j])
		}
		if col := thr.Column(name); col != nil {
			g.Throttled = make([]uint64, len(usage.At))
			for j, v := range col {
				g.Throttled[j] = uint64(max(v, 0))
			}
		}
		r.Groups = append(r.Groups, g)
	}
	return r, smp, nil
}

// heldRun is loadRun from a run's record.Held: the same values as read
// back from the files they were written to.
func heldRun(rs *record.Run, h *record.Held) (*Run, *stats.Sample) {
	r := &Run{Run: rs, Requests: h.Requests}
	for i, name := range h.Groups {
		r.Groups = append(r.Groups, GroupUsage{Name: name, At: h.At, Usage: h.Usage[i], Throttled: h.Throttled[i]})
	}
	return r, h.Latency
}

// InstanceName turns a group name ("r003-limited-1") into the instance's
// name (record.GroupInstance).
func InstanceName(group string) string { return record.GroupInstance(group) }
