// Command reproduce runs every preset's quick variant on this machine (as
// root) and simulates every preset at its original scale, then writes the
// reproduction table, docs/findings.md. It is make reproduce; it takes a
// while (every quick run is a real experiment).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/throttlelab/throttlelab/presets"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/report"
	"github.com/throttlelab/throttlelab/settle"
	"github.com/throttlelab/throttlelab/stats"
	"github.com/throttlelab/throttlelab/verdict"
)

type outcome struct {
	verdict *verdict.Verdict
	env     record.Env
	summary *record.ExperimentSummary
	cmd     string
	err     string
	took    time.Duration
	// date is when it ran; attempts lists every attempt at this row in the
	// history, this one last.
	date     time.Time
	attempts []attempt
	// note says why an open row got no more looks (noTime).
	note string
}

// attempt is one line of history.jsonl: every run of a row, kept, so a
// row run again until it passes shows it.
type attempt struct {
	Row     string    `json:"row"`
	Date    time.Time `json:"date"`
	Outcome string    `json:"outcome"`
}

func main() {
	bin := flag.String("bin", "bin/throttlelab", "throttlelab binary")
	out := flag.String("out", "docs/findings.md", "table to write")
	results := flag.String("results", "results/reproduce", "where the runs go")
	only := flag.String("only", "", "comma-separated presets to run again; the others' last results are read from -results")
	lock := flag.String("lock", "", "a lock file to hold (flock) during each measured run, so runs on a shared host take turns")
	total := flag.Duration("budget", 24*time.Minute, "time for every preset together, from -since when given (0: a fixed number of repeats, no --until-settled): every measured row gets its first judging look, then what is left goes one look at a time to the open row likeliest to settle soonest whose next look fits")
	planOnly := flag.Bool("plan", false, "print each preset's cost per repeat and first look, what is left of -budget after the first looks, and run nothing")
	priorsFrom := flag.String("priors-from", "", "comma-separated measured results directories (one machine, one scale), or directories of them (results/reproduce), to pool into the run-to-run priors of -priors-out with those it has of that machine; runs nothing else")
	priorsOut := flag.String("priors-out", "presets/priors.json", "the priors file -priors-from writes")
	rejudgeDir := flag.String("rejudge", "", "a directory of stored runs (results/reproduce): judge each preset's measured run in it again with this build's checks, priors and rule, print old and new verdicts side by side, and run and write nothing")
	priorsFile := flag.String("priors", "", "with -rejudge: a priors file (as -priors-out writes) to judge with instead of this build's presets/priors.json")
	since := flag.Int64("since", 0, "the UNIX time (date +%s) the budget counts from, so that what ran before this program (make reproduce's build, compiling it) is spent from -budget; 0: now")
	flag.Parse()
	if *rejudgeDir != "" {
		var sets []presets.Priors
		if *priorsFile != "" {
			b, err := os.ReadFile(*priorsFile)
			if err == nil {
				err = json.Unmarshal(b, &sets)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "reproduce: -priors %s: %v: give a file -priors-out wrote\n", *priorsFile, err)
				os.Exit(2)
			}
		}
		rows, err := rejudgeAll(*rejudgeDir, sets)
		if err != nil {
			fmt.Fprintf(os.Stderr, "reproduce: %v\n", err)
			os.Exit(2)
		}
		printRejudged(os.Stdout, *rejudgeDir, rows)
		return
	}
	if *priorsFrom != "" {
		if err := writePriors(os.Stderr, strings.Split(*priorsFrom, ","), *priorsOut); err != nil {
			fmt.Fprintf(os.Stderr, "reproduce: %v\n", err)
			os.Exit(2)
		}
		return
	}
	started, err := budgetStart(*since, time.Now())
	if err != nil {
		fmt.Fprintf(os.Stderr, "reproduce: %v\n", err)
		os.Exit(2)
	}
	history := filepath.Join(*results, "history.jsonl")
	want := map[string]bool{}
	for _, n := range strings.Split(*only, ",") {
		if n != "" {
			want[n] = true
		}
	}
	type row struct {
		p              *presets.Preset
		meas, sim, cmp outcome
	}
	var rows []row
	// Each preset's cost per repeat (costOf): measured in its last
	// result, else estimated from its quick spec.
	var todo []*presets.Preset
	var costs []cost
	var wLeft time.Duration
	perRepeat := map[string]time.Duration{}
	for _, p := range presets.All() {
		if len(want) == 0 || want[p.Name] {
			c := costOf(p, filepath.Join(*results, p.Name), runtime.NumCPU())
			todo, costs = append(todo, p), append(costs, c)
			perRepeat[p.Name] = c.perRepeat
			wLeft += c.perRepeat
		}
	}
	// What the budget spent before this program's first run: the build,
	// with -since; nothing without it.
	var spentBefore time.Duration
	if *since != 0 {
		spentBefore = time.Since(started)
	}
	plan(os.Stderr, todo, costs, *total, spentBefore)
	if *planOnly {
		return
	}
	ran := map[string]bool{}
	for _, p := range presets.All() {
		r := row{p: p}
		measDir, simDir := filepath.Join(*results, p.Name), filepath.Join(*results, p.Name+"-sim")
		cmpDir := filepath.Join(*results, p.Name+"-simq")
		if len(want) > 0 && !want[p.Name] {
			r.meas, r.sim, r.cmp = load(measDir), load(simDir), load(cmpDir)
		} else {
			sim := simBudget(*total, time.Since(started), perRepeat[p.Name], wLeft)
			wLeft -= perRepeat[p.Name]
			// The first round: every row its first judging look only.
			meas := min(*total, firstLook)
			r.meas = locked(*lock, func() outcome { return do(*bin, measDir, settled(meas, "run", p.Name, "--quick")...) })
			r.sim = do(*bin, simDir, settled(sim, "sim", p.Name)...)
			// The measured experiment simulated on a machine like this one,
			// with the measurement's seeds: simulated against measured.
			r.cmp = do(*bin, cmpDir, "sim", "--compare", measDir)
			ran[p.Name] = true
		}
		fmt.Fprintf(os.Stderr, "%s: measured %s, simulated %s\n", p.Name, word(r.meas), word(r.sim))
		rows = append(rows, r)
	}
	// The second round: what is left of the total goes to the measured
	// rows still open after their first judging look, one look at a time
	// (run --resume --until-settled with a budget of a second runs exactly
	// its schedule's next look), each time to the row likeliest to settle
	// soonest whose next look fits in what is left (pick); a row that was
	// never given a look it could afford says so (noTime).
	more := map[int]bool{}
	for *total > 0 {
		left := *total - time.Since(started)
		var cands []candidate
		for i, r := range rows {
			if c, ok := candidateOf(i, r.meas); ok && ran[r.p.Name] {
				cands = append(cands, c)
			}
		}
		k := pick(cands, left)
		if k < 0 {
			for _, c := range cands {
				r := &rows[c.row]
				r.meas.note = noTime(c, max(left, 0))
				save(filepath.Join(*results, r.p.Name), r.meas)
				fmt.Fprintf(os.Stderr, "%s: %s\n", r.p.Name, r.meas.note)
			}
			break
		}
		r := &rows[cands[k].row]
		measDir := filepath.Join(*results, r.p.Name)
		r.meas = locked(*lock, func() outcome {
			return again(*bin, measDir, r.meas, settled(firstLook, "run", "--resume", measDir)...)
		})
		more[cands[k].row] = true
		fmt.Fprintf(os.Stderr, "%s: one more look: measured %s\n", r.p.Name, word(r.meas))
	}
	// The rows given more looks are simulated against measured again, once.
	for i := range rows {
		if !more[i] {
			continue
		}
		r := &rows[i]
		r.cmp = do(*bin, filepath.Join(*results, r.p.Name+"-simq"), "sim", "--compare", filepath.Join(*results, r.p.Name))
	}
	for i := range rows {
		r := &rows[i]
		if ran[r.p.Name] {
			note(history, r.p.Name, &r.meas)
			note(history, r.p.Name+"-sim", &r.sim)
		}
		r.meas.attempts, r.sim.attempts = attempts(history, r.p.Name), attempts(history, r.p.Name+"-sim")
	}
	var b bytes.Buffer
	host := ""
	for _, r := range rows {
		if r.meas.env.Backend == "local" {
			e := r.meas.env
			host = fmt.Sprintf("%s (%s, %d cores, Linux %s, cgroup %s with the cpu controller on %s)", e.Hostname, e.CPUModel, e.Cores, e.Kernel, e.CgroupMode, e.CPUController)
			break
		}
	}
	fmt.Fprintf(&b, "# The findings, reproduced\n\n")
	fmt.Fprintf(&b, "Written by `make reproduce` (`go run ./presets/reproduce`) on %s.\n", time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&b, "Measured: each preset's `--quick` variant with the local backend on %s, as root:\n", host)
	fmt.Fprintf(&b, "`throttlelab run PRESET --quick`. Simulated: each preset at its original scale, on a machine of the original size:\n")
	fmt.Fprintf(&b, "`throttlelab sim PRESET`. Each verdict is the preset's check computed from what that run measured or simulated;\n")
	fmt.Fprintf(&b, "the published figures are the studies' own, from their machines ([the studies](#the-studies) below cite each).\n\n")
	fmt.Fprintf(&b, "Each check has three outcomes: **reproduced** (the 95%% interval of every figure clears its threshold), **not reproduced**\n")
	fmt.Fprintf(&b, "(an interval clears the opposite) and **inconclusive** (an interval straddles its threshold; the cell says how many repeats\n")
	whole := ""
	if spentBefore > 0 {
		whole = fmt.Sprintf(", counted from before the build (`-since`), which took %s of it", spentBefore.Round(time.Second))
	}
	fmt.Fprintf(&b, "would likely settle it). With a budget (`-budget`, %s for every preset together here%s) each row runs `--until-settled`: every measured row first gets its first judging look;\n", *total, whole)
	fmt.Fprintf(&b, "then what is left goes one look at a time (`run --resume`, the row's own schedule) to the open row likeliest to settle soonest (the least repeats needed, at its cost per repeat)\n")
	fmt.Fprintf(&b, "whose next look fits in what is left, and a row that never got a look it could afford says so; a settled row stops (`-plan` prints the costs). Repeats are\n")
	fmt.Fprintf(&b, "added while a check is inconclusive and its intervals still shrink, each look judging at a sequential rule's level, a ratio of two configs on\n")
	fmt.Fprintf(&b, "Student's t interval of the logs of its per-repeat ratios, back-transformed (the configs of a repeat run back to back), the shares, rates and differences with a figure from each repeat on the t interval of those, and any other figure on its bootstrap interval widened for few repeats\n")
	fmt.Fprintf(&b, "(a first look under %d repeats is a pilot that judges nothing); measured rows: %s; simulated rows, whose repeats are cheap: %s;\n", settle.MinJudge, settle.Default.Rate(), settle.Long.Rate())
	fmt.Fprintf(&b, "a measured row's t interval pools its spread with the earlier runs' of the same quick design on this machine, on the same scale (`presets/priors.json`), unless its own spread is too large for them, and its cell says which;\n")
	fmt.Fprintf(&b, "a condition whose interval straddles its threshold within the margin its preset writes around it holds within the margin (no number of repeats would settle its side);\n")
	fmt.Fprintf(&b, "at the rule's last look a condition still straddling its threshold is judged with that margin: it holds within the margin when its interval does not reach below the threshold by more than it, else does not hold by more than it when it does not reach above by more;\n")
	fmt.Fprintf(&b, "the cell says how many repeats it took and why it stopped ([methodology.md](methodology.md#the-stopping-rule)). Intervals: a hierarchical bootstrap, %d resamples of the repeats (the same for every config) and then of each\n", stats.Resamples)
	fmt.Fprintf(&b, "drawn run's requests; with one repeat, of the requests only, so they leave out run-to-run variation ([methodology.md](methodology.md)).\n")
	fmt.Fprintf(&b, "Each cell says when it ran and which attempt at that row it was (every attempt is kept in `%s`;\n", filepath.ToSlash(history))
	fmt.Fprintf(&b, "`-only` reruns one row, and the count shows it). F5 checks throttlelab's own balancers: a self-check, not a finding about the kernel.\n\n")
	fmt.Fprintf(&b, "| finding | preset | published | check | measured here (quick) | simulated (original scale) |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		id := r.p.Finding
		if r.p.SelfCheck {
			id += " (self-check)"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s |\n", id, r.p.Name, r.p.Published, r.p.Check, cell(r.meas), cell(r.sim))
	}
	fmt.Fprintf(&b, "\n## Simulated against measured\n\n")
	fmt.Fprintf(&b, "Each measured quick run simulated on a machine like this one with the measurement's own seeds (`throttlelab sim --compare DIR`):\n")
	fmt.Fprintf(&b, "p99 per config with its 95%% interval. The simulator's validation targets p99 within 25%%.\n\n")
	fmt.Fprintf(&b, "| preset | config | measured p99 ms | simulated p99 ms | simulated / measured |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprint(&b, compareRows(r.p.Name, r.meas, r.cmp))
	}
	fmt.Fprintf(&b, "\n## How each was run\n\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "- **%s** `%s` (%s): %s.\n", r.p.Finding, r.p.Name, r.p.Source, r.p.Claim)
		fmt.Fprintf(&b, "  Measured: `%s` (%s)", r.meas.cmd, r.meas.took.Round(time.Second))
		if r.meas.verdict != nil && r.meas.verdict.Scaled != "" {
			fmt.Fprintf(&b, ", scaled: %s", r.meas.verdict.Scaled)
		}
		if r.meas.verdict != nil && r.meas.verdict.Backend == "sim" {
			fmt.Fprintf(&b, "; this kernel could not run it, so it was simulated")
		}
		fmt.Fprintf(&b, ".\n  Simulated: `%s` on %d cores (%s).\n", r.sim.cmd, r.p.Cores, r.sim.took.Round(time.Millisecond))
	}
	b.WriteString("\n")
	if err := presets.WriteStudies(&b); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", *out)
}

// simShare is the most of a preset's share its simulation gets: repeats
// are cheap there, and the measurement needs the time.
const simShare = time.Minute

// settled is a command's arguments, with --until-settled and its budget
// when there is one.
func settled(budget time.Duration, args ...string) []string {
	if budget <= 0 {
		return args
	}
	return append(args, "--until-settled", "--budget", budget.Round(time.Second).String())
}

// locked runs f holding an flock on path (none for ""), so measured runs
// take turns with other users of a shared host, one run at a time.
func locked(path string, f func() outcome) outcome {
	if path == "" {
		return f()
	}
	fd, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return outcome{err: fmt.Sprintf("lock %s: %v", path, err)}
	}
	defer fd.Close()
	if err := syscall.Flock(int(fd.Fd()), syscall.LOCK_EX); err != nil {
		return outcome{err: fmt.Sprintf("lock %s: %v", path, err)}
	}
	defer syscall.Flock(int(fd.Fd()), syscall.LOCK_UN)
	return f()
}

// note appends an attempt at a row to the history.
func note(history, row string, o *outcome) {
	a := attempt{Row: row, Date: o.date, Outcome: word(*o)}
	b, _ := json.Marshal(a)
	os.MkdirAll(filepath.Dir(history), 0o755)
	f, err := os.OpenFile(history, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	f.Write(append(b, '\n'))
}

// attempts reads a row's attempts from the history, oldest first.
func attempts(history, row string) []attempt {
	b, err := os.ReadFile(history)
	if err != nil {
		return nil
	}
	var out []attempt
	for _, line := range strings.Split(string(b), "\n") {
		var a attempt
		if json.Unmarshal([]byte(line), &a) == nil && a.Row == row {
			out = append(out, a)
		}
	}
	return out
}

// compareRows are the simulated-against-measured rows of one preset.
func compareRows(name string, meas, cmp outcome) string {
	if meas.summary == nil || cmp.summary == nil {
		return fmt.Sprintf("| `%s` | | no result | no result | |\n", name)
	}
	var b strings.Builder
	for _, mc := range meas.summary.Configs {
		for _, sc := range cmp.summary.Configs {
			if sc.Config != mc.Config || sc.Load != mc.Load {
				continue
			}
			ratio := "-"
			if mc.P99Ms > 0 {
				ratio = fmt.Sprintf("%.2f", sc.P99Ms/mc.P99Ms)
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", name, mc.Config, withCI(mc.P99Ms, mc.P99MsCI95), withCI(sc.P99Ms, sc.P99MsCI95), ratio)
		}
	}
	return b.String()
}

func withCI(v float64, iv *stats.Interval) string {
	s := report.FormatMs(v)
	if iv != nil {
		s += " [" + report.FormatInterval(iv) + "]"
	}
	return s
}

// do runs one throttlelab command into dir and reads its verdict.
func do(bin, dir string, args ...string) outcome {
	os.RemoveAll(dir)
	args = append(args, "--out", dir)
	o := outcome{cmd: "throttlelab " + strings.Join(args[:len(args)-2], " "), date: time.Now().UTC()}
	start := time.Now()
	c := exec.Command(bin, args...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	err := c.Run()
	o.took = time.Since(start)
	if err != nil {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		o.err = fmt.Sprintf("%v: %s", err, lines[len(lines)-1])
	}
	os.MkdirAll(dir, 0o755)
	save(dir, o)
	return read(dir, o)
}

// nextLook is how many repeats a measured row stopped for its budget
// would add at its next look (0: it did not stop for its budget).
func nextLook(o outcome) int {
	if o.verdict == nil || o.verdict.Settle == nil || o.verdict.Settle.Reason != string(settle.Budget) || o.verdict.Settle.Next <= o.verdict.Settle.Repeats {
		return 0
	}
	return o.verdict.Settle.Next - o.verdict.Settle.Repeats
}

// perRepeatOf is what a repeat of a row's run took.
func perRepeatOf(o outcome) time.Duration {
	n := 1
	if o.verdict != nil {
		n = max(o.verdict.Repeats, 1)
	}
	return o.took / time.Duration(n)
}

// again runs one more throttlelab command on the results in dir (which it
// keeps) after the one that made prev, and reads its verdict; the
// provenance says both commands and their time together.
func again(bin, dir string, prev outcome, args ...string) outcome {
	o := outcome{cmd: prev.cmd + ", then throttlelab " + strings.Join(args, " "), date: prev.date}
	start := time.Now()
	c := exec.Command(bin, args...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	err := c.Run()
	o.took = prev.took + time.Since(start)
	if err != nil {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		o.err = fmt.Sprintf("%v: %s", err, lines[len(lines)-1])
	}
	save(dir, o)
	return read(dir, o)
}

// provenance is reproduce.json: how a result was made, for a later table.
type provenance struct {
	Cmd     string    `json:"cmd"`
	TookSec float64   `json:"took_sec"`
	Err     string    `json:"error,omitempty"`
	Date    time.Time `json:"date"`
	Note    string    `json:"note,omitempty"`
}

// save writes o's provenance into dir (reproduce.json).
func save(dir string, o outcome) {
	b, _ := json.Marshal(provenance{Cmd: o.cmd, TookSec: o.took.Seconds(), Err: o.err, Date: o.date, Note: o.note})
	os.WriteFile(filepath.Join(dir, "reproduce.json"), b, 0o644)
}

// load reads an earlier result of this program.
func load(dir string) outcome {
	var rec provenance
	b, err := os.ReadFile(filepath.Join(dir, "reproduce.json"))
	if err != nil {
		return outcome{err: "not run yet: run make reproduce"}
	}
	json.Unmarshal(b, &rec)
	return read(dir, outcome{cmd: rec.Cmd, took: time.Duration(rec.TookSec * float64(time.Second)), err: rec.Err, date: rec.Date, note: rec.Note})
}

func read(dir string, o outcome) outcome {
	o.verdict = record.ReadVerdict(dir)
	if b, err := os.ReadFile(filepath.Join(dir, record.EnvFile)); err == nil {
		json.Unmarshal(b, &o.env)
	}
	if b, err := os.ReadFile(filepath.Join(dir, record.SummaryFile)); err == nil {
		var s record.ExperimentSummary
		if json.Unmarshal(b, &s) == nil {
			o.summary = &s
		}
	}
	return o
}

func word(o outcome) string {
	if o.verdict == nil {
		return "failed: " + o.err
	}
	return strings.ToLower(o.verdict.Word())
}

func cell(o outcome) string {
	if o.verdict == nil {
		return "**no result**: " + strings.ReplaceAll(o.err, "|", "/")
	}
	w := "**" + strings.ToLower(o.verdict.Word()) + "**"
	if o.verdict.Backend == "sim" && strings.HasPrefix(o.cmd, "throttlelab run") {
		w += " (simulated: no CPU burst in this kernel)"
	}
	c := w + ": " + strings.ReplaceAll(o.verdict.Numbers, "|", "/")
	if s := o.verdict.Intervals(); s != "" {
		c += ". 95% intervals: " + strings.ReplaceAll(s, "|", "/")
	}
	if strings.EqualFold(o.verdict.Word(), "inconclusive") && o.verdict.RepeatsNeeded > 0 {
		c += fmt.Sprintf(". %s would likely settle it (this run had %d)", o.verdict.RepeatsWords(), max(o.verdict.Repeats, 1))
	}
	if st := o.verdict.Settle; st != nil {
		c += fmt.Sprintf(". Repeats: %s", st.Words)
	}
	if o.note != "" {
		c += ". " + o.note
	}
	if o.verdict.Disturbed != "" {
		c += ". Disturbed: " + o.verdict.Disturbed
	}
	if o.verdict.Why != "" {
		c += ". Why: " + strings.ReplaceAll(o.verdict.Why, "|", "/")
	}
	if !o.date.IsZero() {
		c += fmt.Sprintf(". Ran %s", o.date.Format("2006-01-02"))
	}
	if n := len(o.attempts); n > 0 {
		c += fmt.Sprintf(", attempt %d", n)
		if n > 1 {
			var earlier []string
			for _, a := range o.attempts[:n-1] {
				earlier = append(earlier, a.Outcome)
			}
			c += " (earlier: " + strings.Join(earlier, ", ") + ")"
		}
	}
	return c
}

// writePriors pools the per-repeat spreads of the measured results in
// dirs into the priors file at path: a directory that ran no preset stands
// for its subdirectories that did, measured (results/reproduce), with the
// ones other work disturbed left out (a self-check's excepted, as its
// verdict takes it), and so are the runs the file has already pooled.
// The new spreads are pooled with the file's for the same machine and
// scale (presets.Priors.Merge); the other machines' are kept. What it
// pooled and left out goes to log.
func writePriors(log io.Writer, dirs []string, path string) error {
	var sets []presets.Priors
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &sets); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	var use []string
	for _, d := range dirs {
		if info, err := presets.ReadInfo(d); err != nil || info != nil {
			use = append(use, d)
			continue
		}
		subs, err := os.ReadDir(d)
		if err != nil {
			return err
		}
		for _, e := range subs {
			sub := filepath.Join(d, e.Name())
			v := record.ReadVerdict(sub)
			switch {
			case v == nil || v.Backend != "local":
			case v.Disturbed != "" && !v.SelfCheck:
				fmt.Fprintf(log, "%s: left out, disturbed by other work\n", sub)
			default:
				use = append(use, sub)
			}
		}
	}
	var fresh []string
	for _, d := range use {
		env, err := record.ReadEnv(d)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(sets, func(s presets.Priors) bool { return s.Has(env.Started) }) {
			fmt.Fprintf(log, "%s: left out, already pooled\n", d)
			continue
		}
		fresh = append(fresh, d)
	}
	if len(fresh) == 0 {
		return fmt.Errorf("no new measured results in %s to pool", strings.Join(dirs, ", "))
	}
	p, err := presets.PriorsFrom(fresh)
	if err != nil {
		return err
	}
	out := []presets.Priors{}
	for _, s := range sets {
		if m, ok := s.Merge(p); ok {
			p = m
		} else {
			out = append(out, s)
		}
	}
	out = append([]presets.Priors{p}, out...)
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "pooled %d runs into %s (%s)\n", len(fresh), path, p.Machine)
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// budgetStart is when the budget counts from: since (UNIX seconds) when
// given, so that make reproduce's build and this program's compiling are
// spent from it and the whole make reproduce keeps to the budget; now
// otherwise. A since in the future, or more than a day ago, is not the
// start of this make reproduce.
func budgetStart(since int64, now time.Time) (time.Time, error) {
	if since == 0 {
		return now, nil
	}
	t := time.Unix(since, 0)
	if t.After(now.Add(time.Minute)) || now.Sub(t) > 24*time.Hour {
		return time.Time{}, fmt.Errorf("-since %d is %s, not when this make reproduce began: give the UNIX time it began (date +%%s), or leave -since out", since, t.UTC().Format(time.RFC3339))
	}
	return t, nil
}
