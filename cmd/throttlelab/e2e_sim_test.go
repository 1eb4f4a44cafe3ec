package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSimExample simulates the main example as a user without root would:
// the same results as run, a report, and the limited config worse.
func TestSimExample(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sim")
	cmd := exec.Command(binary, "sim", "../../examples/limits.yaml", "--out", dir, "--cores", "2")
	if os.Geteuid() == 0 {
		os.Chmod(filepath.Dir(binary), 0o755)
		os.Chmod(filepath.Dir(dir), 0o777)
		os.Chmod(filepath.Dir(filepath.Dir(dir)), 0o755)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errb.String())
	}
	for _, f := range []string{"spec.yaml", "env.json", "sim.json", "summary.json", "report.html",
		"runs/limited/load0/r2/requests.csv", "runs/limited/load0/r2/usage.csv", "runs/limited/load0/r2/throttled.csv", "runs/limited/load0/r2/latency.hdr"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	s := readExpSummary(t, dir)
	unl, lim := s.Configs[0], s.Configs[1]
	if lim.ThrottledPct <= 0 || unl.ThrottledPct != 0 || lim.P99Ms <= 1.5*unl.P99Ms {
		t.Errorf("simulated: unlimited p99 %.1f ms, limited p99 %.1f ms throttled %.1f%%: want the limited one throttled and worse", unl.P99Ms, lim.P99Ms, lim.ThrottledPct)
	}
	if !strings.Contains(errb.String(), "events/s") || !strings.Contains(out.String(), "p99/ref") {
		t.Errorf("no speed line or table:\n%s%s", out.String(), errb.String())
	}
	// The answer first: the headline sentence is stdout's first line; what
	// is being simulated and the progress go to stderr.
	first, _, _ := strings.Cut(out.String(), "\n")
	if !strings.HasPrefix(first, "The limited instances' p99 was ") {
		t.Errorf("stdout's first line is %q, want the headline sentence", first)
	}
	if !strings.Contains(errb.String(), "simulating limits on 2 cores") || !strings.Contains(errb.String(), "run 1/4 ") {
		t.Errorf("no header or progress on stderr:\n%s", errb.String())
	}
}

// TestSimCompare compares a recorded real run with its simulation.
func TestSimCompare(t *testing.T) {
	meas := copyDir(t, "../../sim/testdata/real/seq-burn")
	r := run(t, "sim", "--compare", meas)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"measured", "simulated", "cpu0.1 / load0", "within tolerance", "every figure within the tolerances"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("no %q in\n%s", want, r.stdout)
		}
	}
	html, err := os.ReadFile(filepath.Join(meas+"-sim", "report.html"))
	if err != nil || !strings.Contains(string(html), "simulated: cpu0.1") || !strings.Contains(string(html), "measured: cpu0.1") {
		t.Errorf("the comparison report does not draw both: %v", err)
	}
}

func TestSimBadInput(t *testing.T) {
	spec := writeSpec(t, smallSpec)
	simDir := filepath.Join(t.TempDir(), "s")
	if r := run(t, "sim", spec, "--out", simDir); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sim"}, "give an experiment spec"},
		{[]string{"sim", "--cores", "-3", spec}, "--cores -3"},
		{[]string{"sim", "--ns-per-iteration", "0", spec}, "--ns-per-iteration 0"},
		{[]string{"sim", "nosuch.yaml"}, "nosuch.yaml"},
		{[]string{"sim", "--compare", simDir}, "simulated already"},
		{[]string{"sim", "--compare", t.TempDir()}, "not a results directory"},
		{[]string{"sim", "--compare", simDir, spec}, "not both"},
	} {
		r := run(t, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

// TestSimDefaultDirs: two simulations in the same second get directories
// of their own.
func TestSimDefaultDirs(t *testing.T) {
	spec, err := filepath.Abs("../../examples/limits.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wd := t.TempDir()
	for i := 0; i < 2; i++ {
		cmd := exec.Command(binary, "sim", spec, "--cores", "2")
		cmd.Dir = wd
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(wd, "results/limits/sim-*"))
	if len(dirs) != 2 {
		t.Errorf("results dirs %v, want two", dirs)
	}
}

// TestSimInterrupted: Ctrl-C keeps the finished runs, their summary and report.
func TestSimInterrupted(t *testing.T) {
	spec := writeSpec(t, `apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata: {name: long}
spec:
  workload: {request: burn, burn: cpu=5ms}
  load: {mode: rate, rate: 2000, duration: 60s}
  configs: [{name: a, cpu: {limit: "1"}}]
  repeats: 50
`)
	dir := filepath.Join(t.TempDir(), "res")
	cmd := exec.Command(binary, "sim", spec, "--cores", "4", "--out", dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		_, err := os.Stat(filepath.Join(dir, "runs/a/load0/r1/summary.json"))
		return err == nil
	})
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if code := exitCode(err); code != 130 || !strings.Contains(out.String(), "runs finished and kept in") {
		t.Fatalf("exit %d\n%s", code, out.String())
	}
	for _, f := range []string{"summary.json", "report.html", "runs/a/load0/r1/requests.csv"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
}
