// Command validate-advise checks advise's predictions against real cgroups
// (presets/validation on the local backend, in-process): for each
// workload it runs the workload once without a limit and at three limits (one
// with burst), predicts from the unlimited run alone, and tabulates the
// prediction and its interval against what was measured.
//
//	go run ./hack/validate-advise -workload poisson -out /tmp/va   (as root, under the host lock)
//	go run ./hack/validate-advise -doc docs/advise.md -out /tmp/va  (writes the table between the markers)
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/throttlelab/throttlelab/local"
	"github.com/throttlelab/throttlelab/presets/validation"
)

func main() {
	name := flag.String("workload", "", "run this workload (poisson, burst, onoff) and save its rows")
	program := flag.String("program", "", "measure this real program (nginx, postgresql, jvm) with its own client and save its rows")
	rounds := flag.Int("rounds", 2, "with -program: rounds of sampling and measuring")
	out := flag.String("out", "/tmp/validate-advise", "directory for results and rows")
	doc := flag.String("doc", "", "write the table of every saved row into this Markdown file (between its validate-advise markers)")
	bin := flag.String("bin", "bin/throttlelab", "the throttlelab binary the local backend starts for instances and neighbours")
	runFor := flag.Duration("duration", 30*time.Second, "how long each config runs")
	noRun := flag.Bool("no-run", false, "compare the results already in -out again")
	measure := flag.Duration("measure", 30*time.Second, "with -program: how long each limit is measured (-duration is how long it is sampled)")
	warmup := flag.Duration("warmup", time.Minute, "with -program: how long the load runs before the sampling (one client runs through the whole round)")
	settle := flag.Duration("settle", 5*time.Second, "with -program: how long under each limit before it is measured")
	repeats := flag.Int("repeats", 1, "with -program: consecutive windows of -measure under each limit (how far the kernel's own count moves under one limit)")
	flag.Parse()
	if *repeats < 1 {
		fmt.Fprintf(os.Stderr, "validate-advise: -repeats %d: give 1 or more windows per limit\n", *repeats)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if *program != "" {
		err = runProgram(ctx, *program, *out, validation.ProgramRun{Window: *runFor, Measure: *measure, Warmup: *warmup, Settle: *settle, Rounds: *rounds, Repeats: *repeats})
	} else {
		err = run(ctx, *name, *out, *doc, *bin, *runFor, *noRun)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "validate-advise:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, name, out, doc, bin string, runFor time.Duration, noRun bool) error {
	if doc != "" {
		return writeDoc(out, doc, runFor)
	}
	w, err := validation.Find(name)
	if err != nil {
		return fmt.Errorf("-workload: %w", err)
	}
	dir := filepath.Join(out, w.Name)
	if !noRun {
		os.RemoveAll(dir)
		os.MkdirAll(out, 0o755)
		if err := w.Run(ctx, local.New(local.Options{Binary: bin, Log: os.Stderr}), dir, runFor, os.Stderr); err != nil {
			return fmt.Errorf("workload %s: %w", w.Name, err)
		}
	}
	rows, err := w.Compare(dir)
	if err != nil {
		return err
	}
	for _, r := range rows {
		verdict := "within target"
		if !r.Pass {
			verdict = "MISSED: " + strings.Join(r.Why, "; ")
		}
		fmt.Printf("%s %s: predicted %.3f [%.3f, %.3f], measured %.3f: %s\n", r.Workload, r.Limit,
			r.PredictedRatio, r.PredictedLow, r.PredictedHigh, r.MeasuredRatio, verdict)
	}
	if noRun {
		return nil
	}
	b, _ := json.MarshalIndent(rows, "", "  ")
	return os.WriteFile(filepath.Join(out, w.Name+".json"), b, 0o644)
}

func runProgram(ctx context.Context, name, out string, run validation.ProgramRun) error {
	p, err := validation.FindProgram(name)
	if err != nil {
		return fmt.Errorf("-program: %w", err)
	}
	rows, err := validation.MeasureProgram(ctx, p, filepath.Join(out, "program-"+p.Name), run, os.Stdout)
	if err != nil {
		return err
	}
	b, _ := json.MarshalIndent(rows, "", "  ")
	return os.WriteFile(filepath.Join(out, "program-"+p.Name+".json"), b, 0o644)
}

func writeDoc(out, doc string, runFor time.Duration) error {
	host, _ := os.Hostname()
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	env := validation.Env{Host: host, Kernel: strings.TrimSpace(string(kernel)), CPUs: runtime.NumCPU(), Arch: runtime.GOARCH, RunFor: runFor.String()}
	old, _ := os.ReadFile(doc)
	text := string(old)
	// The workloads' table, where all of them were run into out.
	var rows []validation.Row
	var when time.Time
	haveAll := true
	for _, w := range validation.Workloads {
		path := filepath.Join(out, w.Name+".json")
		b, err := os.ReadFile(path)
		if err != nil {
			haveAll = false
			break
		}
		if st, err := os.Stat(path); err == nil && st.ModTime().After(when) {
			when = st.ModTime()
		}
		var rs []validation.Row
		if err := json.Unmarshal(b, &rs); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		rows = append(rows, rs...)
	}
	if haveAll {
		var sec strings.Builder
		wenv := env
		wenv.When = when.UTC().Format("2006-01-02 15:04 UTC")
		if err := validation.WriteTable(&sec, wenv, rows); err != nil {
			return err
		}
		text = validation.Splice(text, sec.String())
	}
	// The programs' table at the knee, a section of its own.
	var prows []validation.ProgramRow
	when = time.Time{}
	for _, p := range validation.Programs {
		path := filepath.Join(out, "program-"+p.Name+".json")
		b, err := os.ReadFile(path)
		if err != nil {
			continue // not measured: its rows are left out
		}
		if st, err := os.Stat(path); err == nil && st.ModTime().After(when) {
			when = st.ModTime()
		}
		var rs []validation.ProgramRow
		if err := json.Unmarshal(b, &rs); err != nil {
			return fmt.Errorf("program %s rows: %w", p.Name, err)
		}
		prows = append(prows, rs...)
	}
	if len(prows) > 0 {
		var sec strings.Builder
		penv := env
		penv.When = when.UTC().Format("2006-01-02 15:04 UTC")
		penv.RunFor = (time.Duration(prows[0].WindowSeconds) * time.Second).String()
		if err := validation.WriteProgramTable(&sec, penv, prows); err != nil {
			return err
		}
		text = validation.SpliceBetween(text, validation.KneeBeginMarker, validation.KneeEndMarker, sec.String())
	}
	if !haveAll && len(prows) == 0 {
		return fmt.Errorf("no rows in %s: run -workload or -program first", out)
	}
	return os.WriteFile(doc, []byte(text), 0o644)
}
