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
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/experiments"
	"github.com/throttlelab/throttlelab/record"
)

type outcome struct {
	verdict *record.Verdict
	env     record.Env
	cmd     string
	err     string
	took    time.Duration
}

func main() {
	bin := flag.String("bin", "bin/throttlelab", "throttlelab binary")
	out := flag.String("out", "docs/findings.md", "table to write")
	results := flag.String("results", "results/reproduce", "where the runs go")
	only := flag.String("only", "", "comma-separated presets to run again; the others' last results are read from -results")
	flag.Parse()
	want := map[string]bool{}
	for _, n := range strings.Split(*only, ",") {
		if n != "" {
			want[n] = true
		}
	}
	type row struct {
		p         *experiments.Preset
		meas, sim outcome
	}
	var rows []row
	for _, p := range experiments.All() {
		r := row{p: p}
		measDir, simDir := filepath.Join(*results, p.Name), filepath.Join(*results, p.Name+"-sim")
		if len(want) > 0 && !want[p.Name] {
			r.meas, r.sim = load(measDir), load(simDir)
		} else {
			r.meas = do(*bin, measDir, "run", p.Name, "--quick")
			r.sim = do(*bin, simDir, "sim", p.Name)
		}
		fmt.Fprintf(os.Stderr, "%s: measured %s, simulated %s\n", p.Name, word(r.meas), word(r.sim))
		rows = append(rows, r)
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
	fmt.Fprintf(&b, "Written by `make reproduce` (`go run ./experiments/reproduce`) on %s.\n", time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&b, "Measured: each preset's `--quick` variant with the local backend on %s, as root:\n", host)
	fmt.Fprintf(&b, "`throttlelab run PRESET --quick`. Simulated: each preset at its original scale, on a machine of the original size:\n")
	fmt.Fprintf(&b, "`throttlelab sim PRESET`. Each verdict is the preset's check computed from what that run measured or simulated;\n")
	fmt.Fprintf(&b, "the published figures are the studies' own (see ../../shared/FINDINGS.md), from their machines.\n\n")
	fmt.Fprintf(&b, "| finding | preset | published | check | measured here (quick) | simulated (original scale) |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s |\n", r.p.Finding, r.p.Name, r.p.Published, r.p.Check, cell(r.meas), cell(r.sim))
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
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", *out)
}

// do runs one throttlelab command into dir and reads its verdict.
func do(bin, dir string, args ...string) outcome {
	os.RemoveAll(dir)
	args = append(args, "--out", dir)
	o := outcome{cmd: "throttlelab " + strings.Join(args[:len(args)-2], " ")}
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
	b, _ := json.Marshal(provenance{Cmd: o.cmd, TookSec: o.took.Seconds(), Err: o.err})
	os.WriteFile(filepath.Join(dir, "reproduce.json"), b, 0o644)
	return read(dir, o)
}

// provenance is reproduce.json: how a result was made, for a later table.
type provenance struct {
	Cmd     string  `json:"cmd"`
	TookSec float64 `json:"took_sec"`
	Err     string  `json:"error,omitempty"`
}

// load reads an earlier result of this program.
func load(dir string) outcome {
	var rec provenance
	b, err := os.ReadFile(filepath.Join(dir, "reproduce.json"))
	if err != nil {
		return outcome{err: "not run yet: run make reproduce"}
	}
	json.Unmarshal(b, &rec)
	return read(dir, outcome{cmd: rec.Cmd, took: time.Duration(rec.TookSec * float64(time.Second)), err: rec.Err})
}

func read(dir string, o outcome) outcome {
	if b, err := os.ReadFile(filepath.Join(dir, "verdict.json")); err == nil {
		var v record.Verdict
		if json.Unmarshal(b, &v) == nil {
			o.verdict = &v
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "env.json")); err == nil {
		json.Unmarshal(b, &o.env)
	}
	return o
}

func word(o outcome) string {
	switch {
	case o.verdict == nil:
		return "failed: " + o.err
	case o.verdict.Reproduced:
		return "reproduced"
	}
	return "not reproduced"
}

func cell(o outcome) string {
	if o.verdict == nil {
		return "**no result**: " + strings.ReplaceAll(o.err, "|", "/")
	}
	w := "**not reproduced**"
	if o.verdict.Reproduced {
		w = "**reproduced**"
	}
	if o.verdict.Backend == "sim" && strings.HasPrefix(o.cmd, "throttlelab run") {
		w += " (simulated: no CPU burst in this kernel)"
	}
	c := w + ": " + strings.ReplaceAll(o.verdict.Numbers, "|", "/")
	if o.verdict.Why != "" {
		c += ". Why: " + strings.ReplaceAll(o.verdict.Why, "|", "/")
	}
	return c
}
