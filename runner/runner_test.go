package runner

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/record"
)

const spec = `apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata: {name: fake}
spec:
  workload: {request: burn, burn: cpu=5ms}
  load: {mode: rate, rate: 10, duration: 1s}
  configs:
    - name: a
    - name: b
      cpu: {request: 500m, limit: 500m}
  repeats: 2
  order: interleaved
`

// fake is a backend that records which runs it was asked for, writes one
// file per run, and fails (or cancels) at a given run.
type fake struct {
	ran      []string
	failAt   string
	cancel   context.CancelFunc
	prepared bool
	closed   bool
}

var errFake = errors.New("fake failure")

func (f *fake) Name() string { return "fake" }

func (f *fake) Prepare(context.Context, *experiment.Experiment) (record.Env, error) {
	f.prepared = true
	return record.Env{Hostname: "fake", Cores: 3}, nil
}

func (f *fake) Run(ctx context.Context, run experiment.Run, dir string) (*record.Run, error) {
	if run.ID() == f.failAt {
		if f.cancel != nil {
			f.cancel()
			return nil, ctx.Err()
		}
		return nil, errFake
	}
	f.ran = append(f.ran, run.ID())
	if err := os.WriteFile(filepath.Join(dir, "requests.csv"), []byte(run.ID()+"\n"), 0o644); err != nil {
		return nil, err
	}
	return &record.Run{Summary: &loadgen.Totals{Requests: 10, OK: 10, Latency: loadgen.LatencySummary{P99: float64(1 + run.Index)}}}, nil
}

func (f *fake) Close() error { f.closed = true; return nil }

func load(t *testing.T) *experiment.Experiment {
	t.Helper()
	e, err := experiment.Parse([]byte(spec), "fake.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestInterleavedOrderAndFiles: the runner asks the backend for every run in
// the interleaved order, and each run's directory holds what the backend
// wrote and the summary the runner wrote, with nothing temporary left.
func TestInterleavedOrderAndFiles(t *testing.T) {
	e, dir := load(t), t.TempDir()
	b := &fake{}
	out, err := Run(context.Background(), e, b, Options{Dir: dir, Version: "v-test"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a/load0/r1", "b/load0/r1", "a/load0/r2", "b/load0/r2"}
	if !reflect.DeepEqual(b.ran, want) {
		t.Errorf("runs %v, want %v", b.ran, want)
	}
	if !b.prepared || !b.closed || len(out.Runs) != 4 || out.Total != 4 {
		t.Errorf("prepared %v, closed %v, %d of %d runs", b.prepared, b.closed, len(out.Runs), out.Total)
	}
	for i, id := range want {
		rs, err := record.ReadRun(filepath.Join(dir, "runs", id))
		if err != nil {
			t.Fatal(err)
		}
		if rs.ID != id || rs.Index != i || rs.Summary.Requests != 10 {
			t.Errorf("%s: summary %+v", id, rs)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "runs", id, "requests.csv")); err != nil || string(b) != id+"\n" {
			t.Errorf("%s: requests.csv %q %v", id, b, err)
		}
	}
	_, env, runs, err := record.ReadResults(dir)
	if err != nil || env.Backend != "fake" || env.Version != "v-test" || env.GOMAXPROCS["b"] != "host" || len(runs) != 4 {
		t.Errorf("results dir: env %+v, %d runs, %v", env, len(runs), err)
	}
	if s := out.Summary; s == nil || len(s.Configs) != 2 || s.Configs[1].Repeats != 2 {
		t.Errorf("summary %+v", s)
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err != nil {
		t.Error(err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, "runs", "*", "*", ".tmp-*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary directories left: %v", leftovers)
	}
}

// TestResumeSkipsFinishedRuns: an experiment stopped by a failing run keeps
// the runs before it (and no trace of the failed one); resumed, it runs only
// what is missing.
func TestResumeSkipsFinishedRuns(t *testing.T) {
	e, dir := load(t), t.TempDir()
	first := &fake{failAt: "a/load0/r2"}
	out, err := Run(context.Background(), e, first, Options{Dir: dir})
	if !errors.Is(err, errFake) || !strings.Contains(err.Error(), "run a/load0/r2") {
		t.Fatalf("error %v, want the fake failure of run a/load0/r2", err)
	}
	if len(out.Runs) != 2 || !first.closed {
		t.Fatalf("%d runs kept, closed %v", len(out.Runs), first.closed)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs", "a", "load0", "r2")); !os.IsNotExist(err) {
		t.Errorf("the failed run has a directory: %v", err)
	}
	var log strings.Builder
	second := &fake{}
	out, err = Run(context.Background(), e, second, Options{Dir: dir, Resume: true, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a/load0/r2", "b/load0/r2"}; !reflect.DeepEqual(second.ran, want) {
		t.Errorf("resumed runs %v, want %v", second.ran, want)
	}
	if len(out.Runs) != 4 || !strings.Contains(log.String(), "run 1/4 a/load0/r1: done before, kept") {
		t.Errorf("%d runs; log:\n%s", len(out.Runs), log.String())
	}
}

// TestCancelKeepsFinishedRuns: cancelled in the middle, the runner returns
// the context's error and keeps what finished.
func TestCancelKeepsFinishedRuns(t *testing.T) {
	e, dir := load(t), t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := &fake{failAt: "b/load0/r1", cancel: cancel}
	out, err := Run(ctx, e, b, Options{Dir: dir})
	if !errors.Is(err, context.Canceled) || len(out.Runs) != 1 || !b.closed {
		t.Errorf("error %v, %d runs, closed %v", err, len(out.Runs), b.closed)
	}
}

// fakeReport is a report read once, whose summary the runner must take.
type fakeReport struct {
	reads   int
	dirs    []string
	summary *record.ExperimentSummary
	wrote   string
}

func (r *fakeReport) Summary() *record.ExperimentSummary { return r.summary }
func (r *fakeReport) Write(w io.Writer, path string) error {
	r.wrote = path
	return nil
}

// judgeOf records the summary it was given.
type judgeOf struct{ got *record.ExperimentSummary }

func (j *judgeOf) Judge(dir string, s *record.ExperimentSummary) (Verdict, error) {
	j.got = s
	return fakeVerdict{Preset: "fake"}, nil
}

// fakeVerdict is a verdict as a preset's marshals: a JSON object.
type fakeVerdict struct {
	Preset string `json:"preset"`
}

func (v fakeVerdict) Short() string     { return v.Preset + " REPRODUCED" }
func (v fakeVerdict) Details() []string { return []string{v.Preset + " check: none"} }

// TestReportReadOnce: when the runs end the report reads the directories
// once, and its summary is the one summary.json holds and the judge judges.
func TestReportReadOnce(t *testing.T) {
	e, dir := load(t), t.TempDir()
	rep := &fakeReport{summary: &record.ExperimentSummary{Name: "from the report"}}
	j := &judgeOf{}
	opt := Options{Dir: dir, Compare: []string{"measured"}, Judge: j, Report: func(dirs []string, _ []*record.Run) (Report, error) {
		rep.reads++
		rep.dirs = dirs
		return rep, nil
	}}
	out, err := Run(context.Background(), e, &fake{}, opt)
	if err != nil {
		t.Fatal(err)
	}
	if rep.reads != 1 || !reflect.DeepEqual(rep.dirs, []string{"measured", dir}) {
		t.Errorf("report read %d times, of %v", rep.reads, rep.dirs)
	}
	if out.Summary != rep.summary || j.got != rep.summary {
		t.Errorf("summary %p, judged %p: want the report's %p", out.Summary, j.got, rep.summary)
	}
	if rep.wrote != filepath.Join(dir, "report.html") {
		t.Errorf("report written to %q", rep.wrote)
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil || !strings.Contains(string(b), "from the report") || !strings.Contains(string(b), `"preset": "fake"`) {
		t.Errorf("summary.json: %s %v", b, err)
	}
}

// TestLiveProgressLeavesNoTrace: on a terminal (Live) the per-run line is
// redrawn in place and erased before the runs end, the header written once
// the backend is ready; without Live, a line per run.
func TestLiveProgressLeavesNoTrace(t *testing.T) {
	for _, live := range []bool{true, false} {
		var log bytes.Buffer
		_, err := Run(context.Background(), load(t), &fake{}, Options{Dir: t.TempDir(), Log: &log, Live: live, Header: "the header"})
		if err != nil {
			t.Fatal(err)
		}
		got := log.String()
		if !strings.HasPrefix(got, "the header\n") {
			t.Errorf("live=%v: log starts %q, want the header first", live, got)
		}
		last := strings.LastIndex(got, "\r\033[K")
		if live && (last < 0 || strings.HasPrefix(got[last+4:], "run ") || !strings.Contains(got, "\r\033[Krun 4/4") || strings.Contains(got[:last], "\nrun ")) {
			t.Errorf("live: %q: want the runs redrawn on one line and erased", got)
		}
		if !live && (strings.Contains(got, "\r") || !strings.Contains(got, "run 1/")) {
			t.Errorf("not live: %q: want a plain line per run", got)
		}
	}
}
