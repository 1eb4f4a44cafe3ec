package record

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/stats"
	"github.com/throttlelab/throttlelab/verdict"
	"github.com/throttlelab/throttlelab/workload"
)

// ErrIncomplete marks a run directory whose summary.json has no load summary.
var ErrIncomplete = errors.New("incomplete run summary")

// ReadRun reads a run's summary.json in its directory (runs/CONFIG/LOAD/rN).
// A run that did not finish has no directory: runs are renamed into place
// when complete.
func ReadRun(dir string) (*Run, error) {
	b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		return nil, err
	}
	var rs Run
	if err := json.Unmarshal(b, &rs); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, SummaryFile), err)
	}
	if rs.Summary == nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, SummaryFile), ErrIncomplete)
	}
	return &rs, nil
}

// ReadSpec reads the spec.yaml of a results directory with
// experiment.ParseSaved: the resolved spec a run or simulation wrote.
func ReadSpec(dir string) (*experiment.Experiment, error) {
	p := filepath.Join(dir, SpecFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return experiment.ParseSaved(b, p)
}

// ReadEnv reads the env.json of a results directory (fs.ErrNotExist when
// there is none).
func ReadEnv(dir string) (Env, error) {
	var env Env
	p := filepath.Join(dir, EnvFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return env, err
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return env, fmt.Errorf("%s: %w", p, err)
	}
	return env, nil
}

// ReadRequests reads a run directory's requests.csv, or requests.csv.gz
// where the records were compressed to be kept.
func ReadRequests(runDir string) ([]loadgen.Record, error) {
	path := filepath.Join(runDir, RequestsFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		path += ".gz"
		f, err = os.Open(path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rd io.Reader = bufio.NewReaderSize(f, 1<<16)
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(rd)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rd = gz
	}
	recs, err := loadgen.ReadRecords(rd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return recs, nil
}

// ReadVerdict reads verdict.json, which a preset's run writes next to its
// results; nil when there is none or it cannot be read.
func ReadVerdict(dir string) *verdict.Verdict {
	b, err := os.ReadFile(filepath.Join(dir, VerdictFile))
	if err != nil {
		return nil
	}
	var v verdict.Verdict
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	return &v
}

// WriteVerdict writes a preset's verdict as verdict.json in dir.
func WriteVerdict(dir string, v *verdict.Verdict) error {
	return WriteJSON(filepath.Join(dir, VerdictFile), v)
}

// ReadResults reads a results directory: the resolved spec, the environment
// and the summaries of the runs that finished, in the order they were run.
func ReadResults(dir string) (*experiment.Experiment, Env, []*Run, error) {
	// Runs are read by their IDs, in the order they were made; one not
	// renamed into place yet (unfinished) is not there.
	var env Env
	e, err := ReadSpec(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, env, nil, fmt.Errorf("%s: not a results directory (no spec.yaml): give a directory written by throttlelab run or sim", dir)
	}
	if err != nil {
		return nil, env, nil, fmt.Errorf("%s: %w", dir, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, EnvFile)); err == nil {
		if err := json.Unmarshal(b, &env); err != nil {
			return nil, env, nil, fmt.Errorf("%s: %w", filepath.Join(dir, EnvFile), err)
		}
	}
	var runs []*Run
	for _, r := range e.Runs() {
		rs, err := ReadRun(RunDir(dir, r))
		if err != nil {
			continue // not run yet
		}
		runs = append(runs, rs)
	}
	if len(runs) == 0 {
		return nil, env, nil, fmt.Errorf("%s: no finished runs yet: resume the experiment to finish it", dir)
	}
	return e, env, runs, nil
}

// ReadBurstCycles reads a burst neighbour's burst-NAME.jsonl in a run's
// directory: one line per finished cycle.
func ReadBurstCycles(runDir, name string) ([]workload.BurstCycle, error) {
	f, err := os.Open(filepath.Join(runDir, BurstFile(name)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []workload.BurstCycle
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		var c workload.BurstCycle
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", f.Name(), line, err)
		}
		out = append(out, c)
	}
	return out, sc.Err()
}

// ReadSamples reads each run's request records (requests.csv or .gz in
// dir's run directories) into a sample of its successful latencies in ms,
// by run ID: what Summary.AddIntervals takes.
func ReadSamples(dir string, runs []*Run) (map[string]*stats.Sample, error) {
	out := map[string]*stats.Sample{}
	for _, r := range runs {
		recs, err := ReadRequests(RunIDDir(dir, r.ID))
		if err != nil {
			return nil, fmt.Errorf("reading the requests of run %s: %w", r.ID, err)
		}
		out[r.ID] = LatencySample(recs)
	}
	return out, nil
}

// LatencySample is the sample of a run's successful latencies in ms, in
// the records' order: what ReadSamples and the report take from the
// requests they read.
func LatencySample(recs []loadgen.Record) *stats.Sample {
	v := make([]float64, 0, len(recs))
	for i := range recs {
		if recs[i].Err == "" {
			v = append(v, float64(recs[i].Latency)/1e6)
		}
	}
	return stats.NewSample(v)
}
