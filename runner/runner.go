package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/verdict"
)

// Backend turns one run of an experiment into a recorded run. The runner
// calls Prepare once, then Run for each run not finished yet, in the spec's
// order, then Close on every path.
type Backend interface {
	// Name is the backend as env.json records it ("local", "sim", "kubernetes").
	Name() string
	// Prepare readies the backend for e's runs and describes where they run
	// (env.json; the runner fills in the backend's name, the tool's version
	// and the configs' GOMAXPROCS policies).
	Prepare(ctx context.Context, e *experiment.Experiment) (record.Env, error)
	// Run performs one run (its config, load and repeat), writes the run's
	// files (requests.csv, usage.csv, throttled.csv, latency.hdr, ...) into
	// dir, which exists and is empty, and returns what it measured. The
	// runner writes summary.json and moves dir into place.
	Run(ctx context.Context, run experiment.Run, dir string) (*record.Run, error)
	// Close releases what Prepare and the runs made.
	Close() error
}

// Finisher is a Backend with something to write once every run is done
// (the simulator's sim.json).
type Finisher interface {
	Finish(dir string) error
}

// Judge computes a preset's check over a finished results directory (see
// presets.Info); nil verdict for an experiment that is no preset. s is
// the directory's summary with its intervals, already read: the judge need
// not read the requests again.
type Judge interface {
	Judge(dir string, s *record.ExperimentSummary) (Verdict, error)
}

// Verdict is what the runner does with a preset's verdict (verdict.Verdict):
// print its short line before the table and its details after it, and write
// it into summary.json as it marshals. The runner runs any experiment, so it
// knows presets only through this.
type Verdict interface {
	Short() string
	Details() []string
}

// Report is results directories read for a report (report.Set): the runner
// takes the summary of its own directory from it, so a run's requests are
// read once at the end, then writes it.
type Report interface {
	// Summary is the last directory's runs summed up, with their intervals.
	Summary() *record.ExperimentSummary
	// Write prints the table to w and writes the HTML report to path
	// ("": the last directory's report.html).
	Write(w io.Writer, path string) error
}

// Options control a run of an experiment.
type Options struct {
	// Dir is the results directory; with Resume it holds some runs already,
	// which are kept and not run again.
	Dir    string
	Resume bool
	// Version is the tool's version, written into env.json.
	Version string
	// Log receives one line per run with an ETA, and warnings.
	Log io.Writer
	// Header, if set, is written to Log once the backend is ready and the
	// results directory made (what is about to run, and where): a run that
	// cannot start says only why.
	Header string
	// Live redraws the per-run line in place and erases it when the runs
	// end (Log is a terminal): progress that leaves no trace above the
	// answer.
	Live bool
	// Out receives the verdict, the table and where the report is (nil: none).
	Out io.Writer
	// Color paints the table printed when there is no report.
	Color bool
	// Table, if set, prints the summary's rows when the report cannot be
	// written (report.WriteRows: the runner does not draw).
	Table func(w io.Writer, rows []record.Row, color bool)
	// Judge, if set, checks a preset's finding when every run finished.
	Judge Judge
	// Report, if set, reads the results directories (Compare, then Dir)
	// when the runs end; the runner prints the table and writes
	// report.html through what it returns (a *report.Set). held are Dir's
	// runs as the backend returned them: those with a record.Held need not
	// be read back.
	Report func(dirs []string, held []*record.Run) (Report, error)
	// Compare are results directories drawn before this one in the report
	// (sim --compare draws the measurement beside the simulation).
	Compare []string
	// Settle, if set, runs the experiment until its check settles
	// (UntilSettled): Judge must be set.
	Settle *Settle

	// settleLevel, when set (UntilSettled), is the stopping rule's level
	// the verdict is judged at, and settling what the repeats came to.
	settleLevel float64
	settling    *verdict.Settling
}

// Outcome is what a run of an experiment produced: the finished runs in
// order (those kept from before too), and their summary.
type Outcome struct {
	Runs []*record.Run
	// Total is the number of runs the experiment has.
	Total   int
	Summary *record.ExperimentSummary
}

// Run runs every run of e that Dir does not hold yet on backend b, writing
// each run as it finishes, then sums up, judges and reports. On error or
// cancellation it stops, keeps the finished runs (and sums them up and
// reports them) and returns the error; Outcome is never nil. With
// opt.Settle it is UntilSettled.
func Run(ctx context.Context, e *experiment.Experiment, b Backend, opt Options) (*Outcome, error) {
	if opt.Settle != nil {
		s := *opt.Settle
		opt.Settle = nil
		return UntilSettled(ctx, e, b, opt, s)
	}
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	runs := e.Runs()
	out := &Outcome{Total: len(runs)}
	env, err := b.Prepare(ctx, e)
	defer b.Close()
	if err != nil {
		return out, err
	}
	if err := writeHead(e, b.Name(), env, opt); err != nil {
		return out, err
	}
	if opt.Header != "" {
		fmt.Fprintln(opt.Log, opt.Header)
	}
	started := time.Now()
	st := status{w: opt.Log, live: opt.Live}
	done := 0
	var runErr error
	for _, run := range runs {
		dir := record.RunDir(opt.Dir, run)
		if opt.Resume {
			if prev, err := record.ReadRun(dir); err == nil {
				fmt.Fprintf(opt.Log, "run %d/%d %s: done before, kept\n", run.Index+1, len(runs), run.ID())
				out.Runs = append(out.Runs, prev)
				continue
			}
		}
		if runErr = ctx.Err(); runErr != nil {
			break
		}
		eta := "?"
		if done > 0 {
			per := time.Since(started) / time.Duration(done)
			eta = (per * time.Duration(len(runs)-run.Index)).Round(time.Second).String()
		}
		st.show(fmt.Sprintf("run %d/%d %s (eta %s)", run.Index+1, len(runs), run.ID(), eta))
		rs, err := runOne(ctx, b, run, e.Seed(run), dir)
		if err != nil {
			runErr = fmt.Errorf("run %s: %w", run.ID(), err)
			break
		}
		done++
		out.Runs = append(out.Runs, rs)
		if rs.Disturbed(env.Cores) {
			st.clear()
			fmt.Fprintf(opt.Log, "run %s: other work on the host used %.2f of its %d cores meanwhile (more than %.0f%%): its figures include that work's interference, and a preset's verdict will be inconclusive (a self-check's excepted)\n",
				run.ID(), *rs.HostOtherCores, env.Cores, 100*record.DisturbedShare)
		}
	}
	st.clear()
	if runErr == nil {
		if f, ok := b.(Finisher); ok {
			runErr = f.Finish(opt.Dir)
		}
	}
	if len(out.Runs) > 0 {
		if err := finish(e, out, runErr == nil, opt); err != nil && runErr == nil {
			runErr = err
		}
	}
	return out, runErr
}

// status writes the per-run progress line: a line each, or, live, one line
// redrawn in place and erased by clear.
type status struct {
	w     io.Writer
	live  bool
	shown bool
}

func (s *status) show(line string) {
	if !s.live {
		fmt.Fprintln(s.w, line)
		return
	}
	fmt.Fprint(s.w, "\r\033[K"+line)
	s.shown = true
}

// clear erases a live line, so what follows starts on a clean line.
func (s *status) clear() {
	if s.shown {
		fmt.Fprint(s.w, "\r\033[K")
		s.shown = false
	}
}

// writeHead writes spec.yaml and env.json of a new results directory.
func writeHead(e *experiment.Experiment, name string, env record.Env, opt Options) error {
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return err
	}
	if opt.Resume {
		return nil
	}
	if err := record.WriteSpec(opt.Dir, e); err != nil {
		return err
	}
	env.Backend, env.Version = name, opt.Version
	env.GOMAXPROCS = map[string]string{}
	for _, c := range e.Spec.Configs {
		env.GOMAXPROCS[c.Name] = c.Server.GOMAXPROCS.String()
	}
	return record.WriteJSON(filepath.Join(opt.Dir, record.EnvFile), env)
}

// runOne performs one run in a temporary directory beside its own and
// renames it into place when it is complete, so a run directory either holds
// a whole run or does not exist.
func runOne(ctx context.Context, b Backend, run experiment.Run, seed uint64, dir string) (*record.Run, error) {
	tmp := filepath.Join(filepath.Dir(dir), ".tmp-"+filepath.Base(dir))
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	rs, err := b.Run(ctx, run, tmp)
	if err != nil {
		return nil, err
	}
	if rs == nil || rs.Summary == nil {
		return nil, errors.New("the backend recorded no load summary")
	}
	rs.ID, rs.Index, rs.Config, rs.Load, rs.Repeat, rs.Seed = run.ID(), run.Index, run.Config.Name, run.Load.Name, run.Repeat, seed
	if err := record.WriteJSON(filepath.Join(tmp, record.SummaryFile), rs); err != nil {
		return nil, err
	}
	os.RemoveAll(dir) // a leftover of an interrupted earlier attempt
	if err := os.Rename(tmp, dir); err != nil {
		return nil, err
	}
	return rs, nil
}

// finish sums the runs up into summary.json, judges a preset (when every run
// finished) and writes the report. The runs' requests are read once: by the
// report when there is one (its summary is this one), else for the
// intervals alone.
func finish(e *experiment.Experiment, out *Outcome, complete bool, opt Options) error {
	w := opt.Out
	if w == nil {
		w = io.Discard
	}
	var rep Report
	if opt.Report != nil {
		var err error
		if rep, err = opt.Report(append(append([]string{}, opt.Compare...), opt.Dir), out.Runs); err != nil {
			// The measurements are on disk; only the report failed.
			rep = nil
			fmt.Fprintf(opt.Log, "throttlelab: no report: %v (the results are kept; try throttlelab report %s)\n", err, opt.Dir)
		}
	}
	var s *record.ExperimentSummary
	if rep != nil {
		s = rep.Summary()
	} else {
		s = record.Summarize(e, out.Runs)
		if smp, err := record.ReadSamples(opt.Dir, out.Runs); err == nil {
			s.AddIntervals(smp)
		} else {
			fmt.Fprintf(opt.Log, "throttlelab: no intervals in summary.json: %v\n", err)
		}
	}
	out.Summary = s
	var judged Verdict
	if complete && opt.Judge != nil {
		// The check reads the runs, not summary.json, so the summary can
		// carry the verdict.
		v, err := opt.Judge.Judge(opt.Dir, s)
		if err != nil {
			fmt.Fprintf(opt.Log, "throttlelab: %v\n", err)
		}
		if sv, ok := v.(*verdict.Verdict); ok && opt.settleLevel > 0 {
			// Settle first: JudgeAt judges the rule's last look with the margin.
			sv.Settle = opt.settling
			if _, err := sv.JudgeAt(opt.settleLevel); err != nil {
				return err
			}
			if err := record.WriteVerdict(opt.Dir, sv); err != nil {
				return err
			}
		}
		if v != nil {
			// The answer first: one short line, the details after the table.
			fmt.Fprintln(w, v.Short())
			s.Verdict, judged = v, v
		}
	}
	if err := record.WriteFileAtomic(filepath.Join(opt.Dir, record.SummaryFile), func(f *os.File) error { return writeJSONTo(f, s) }); err != nil {
		return err
	}
	if opt.Report == nil {
		writeDetails(w, judged)
		return nil
	}
	err := errors.New("the results could not be read")
	if rep != nil {
		err = rep.Write(w, filepath.Join(opt.Dir, record.ReportFile))
	}
	if err != nil {
		if opt.Table != nil {
			opt.Table(w, s.Rows(), opt.Color)
		}
		if rep != nil {
			fmt.Fprintf(opt.Log, "throttlelab: no report: %v (the results are kept; try throttlelab report %s)\n", err, opt.Dir)
		}
	}
	writeDetails(w, judged)
	return nil
}

// writeDetails writes a verdict's details, one a line (nothing for nil).
func writeDetails(w io.Writer, v Verdict) {
	if v == nil {
		return
	}
	for _, l := range v.Details() {
		fmt.Fprintln(w, l)
	}
}

func writeJSONTo(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
