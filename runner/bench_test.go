package runner_test

import (
	"context"
	"io"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/presets"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/report"
	"github.com/throttlelab/throttlelab/runner"
	"github.com/throttlelab/throttlelab/sim"
)

// BenchmarkSimLogJam is `throttlelab sim f01-logjam` (16 cores, 10 runs of
// 13,005-130,050 requests) three ways in the same run, and reports their
// times and ratios:
//   - path: the runner as the CLI drives it, the report taking the runs'
//     records and samples from memory (record.Held; it serves the summary
//     and the judge);
//   - readback: the same, the report reading them back from the files;
//   - reread: the same simulation followed by what the runner did before,
//     the records read three times (intervals, judge, report);
//   - model: the simulated runs in memory (sim.Simulate), nothing written or
//     read, as map and advise use the model.
func BenchmarkSimLogJam(b *testing.B) {
	p, ok := presets.Lookup("f01-logjam")
	if !ok {
		b.Fatal("no preset f01-logjam")
	}
	e, err := p.Spec()
	if err != nil {
		b.Fatal(err)
	}
	info := &presets.Info{Preset: p.Name}
	newReport := func(dirs []string, held []*record.Run) (runner.Report, error) {
		s, err := report.ReadSet(dirs, held...)
		if err != nil {
			return nil, err
		}
		s.Sections = []report.Section{report.AdviceSection}
		return s, nil
	}
	readBack := func(dirs []string, _ []*record.Run) (runner.Report, error) { return newReport(dirs, nil) }
	simOpt := sim.Options{Cores: p.Cores}
	var path, back, reread, model time.Duration
	for i := 0; i < b.N; i++ {
		dir := filepath.Join(b.TempDir(), "path")
		start := time.Now()
		if _, err := runner.Run(context.Background(), e, sim.NewBackend(simOpt), runner.Options{Dir: dir, Judge: info, Report: newReport, Out: io.Discard}); err != nil {
			b.Fatal(err)
		}
		path += time.Since(start)

		dir = filepath.Join(b.TempDir(), "back")
		start = time.Now()
		if _, err := runner.Run(context.Background(), e, sim.NewBackend(simOpt), runner.Options{Dir: dir, Judge: info, Report: readBack, Out: io.Discard}); err != nil {
			b.Fatal(err)
		}
		back += time.Since(start)

		dir = filepath.Join(b.TempDir(), "reread")
		start = time.Now()
		if err := rereadPath(e, p, dir, simOpt); err != nil {
			b.Fatal(err)
		}
		reread += time.Since(start)

		start = time.Now()
		for _, r := range e.Runs() {
			if _, err := sim.Simulate(context.Background(), e, r, simOpt); err != nil {
				b.Fatal(err)
			}
		}
		model += time.Since(start)
	}
	n := time.Duration(b.N)
	b.ReportMetric((path / n).Seconds(), "s/path")
	b.ReportMetric((back / n).Seconds(), "s/readback")
	b.ReportMetric((reread / n).Seconds(), "s/reread")
	b.ReportMetric((model / n).Seconds(), "s/model")
	b.ReportMetric(float64(path)/float64(back), "path/readback")
	b.ReportMetric(float64(path)/float64(reread), "path/reread")
	b.ReportMetric(float64(model)/float64(path), "model/path")
}

// rereadPath is the simulation as the runner finished it before its
// records were read once: summary intervals, judge and report each read
// every run's requests.
func rereadPath(e *experiment.Experiment, p *presets.Preset, dir string, opt sim.Options) error {
	if _, err := runner.Run(context.Background(), e, sim.NewBackend(opt), runner.Options{Dir: dir}); err != nil {
		return err // summed up with ReadSamples: the first read
	}
	if _, err := p.Evaluate(dir, ""); err != nil { // the second
		return err
	}
	s, err := report.ReadSet([]string{dir}) // the third
	if err != nil {
		return err
	}
	s.Sections = []report.Section{report.AdviceSection}
	return s.Write(io.Discard, "")
}

// BenchmarkLogJamAdvice is the Advice section's work in `throttlelab sim
// f01-logjam`: advise on each config's first run (its instance's 10 ms use,
// rebuilt where its limit throttled), two ways in alternating rounds: today's
// (Advise: every point counted in one pass, the band replayed) and the one
// before (AllDelays: every point replayed). It reports the seconds of each
// and their ratio, and checks that they advise alike.
func BenchmarkLogJamAdvice(b *testing.B) {
	s := simulatedLogJam(b)
	type input struct {
		d       *advise.Demand
		sampled advise.Sampled
	}
	var inputs []input
	for _, src := range s.Sources {
		seen := map[string]bool{}
		for _, r := range src.Runs {
			if seen[r.Config] || len(r.Instances) == 0 {
				continue
			}
			seen[r.Config] = true
			for i := range r.Groups {
				if g := &r.Groups[i]; report.InstanceName(g.Name) == r.Instances[0] {
					rec := r.Run.Demand(r.Instances[0], g.At, g.Usage, g.Throttled)
					inputs = append(inputs, input{rec.Demand, advise.Sampled{CPUStat: rec.CPUStat, LimitMilli: rec.LimitMilli, PeriodUsec: rec.PeriodUsec}})
					break
				}
			}
		}
	}
	if len(inputs) != 2 {
		b.Fatalf("%d configs' runs, want 2", len(inputs))
	}
	var band, all time.Duration
	for range b.N {
		for _, in := range inputs {
			start := time.Now()
			a, err := advise.Advise(in.d, advise.Request{}, in.sampled)
			if err != nil {
				b.Fatal(err)
			}
			band += time.Since(start)
			start = time.Now()
			ref, err := advise.Advise(in.d, advise.Request{AllDelays: true}, in.sampled)
			if err != nil {
				b.Fatal(err)
			}
			all += time.Since(start)
			if !reflect.DeepEqual(a.Recommendation, ref.Recommendation) {
				b.Fatalf("recommendation %+v, every point replayed %+v", a.Recommendation, ref.Recommendation)
			}
		}
	}
	n := float64(b.N)
	b.ReportMetric(band.Seconds()/n, "s/band")
	b.ReportMetric(all.Seconds()/n, "s/every-point")
	b.ReportMetric(float64(all)/float64(band), "every-point/band")
}
