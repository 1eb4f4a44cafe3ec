package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/internal/golden"
)

// hostileSpec is a small valid experiment; each case below writes one bad
// value into it.
const hostileSpec = `apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata: {name: hostile}
spec:
  workload: {request: api}
  load: {mode: rate, rate: 20, duration: 1s}
  configs:
    - name: a
      cpu: {limit: 500m}
  neighbours:
    - {name: hog, kind: noise}
`

// TestHostileSpecsRefused holds every hostile spec that must be an error:
// run and validate refuse the spec before anything starts, exit 2, and say
// on one line which file, line and field is at fault.
func TestHostileSpecsRefused(t *testing.T) {
	tests := []struct {
		name, from, to, want string
	}{
		{"limit that overflowed the quota", "limit: 500m", "limit: 100000000000", `:9: spec.configs[0].cpu.limit: cpu quantity "100000000000": more than 4096 CPUs`},
		{"millicores that wrapped the shares", "limit: 500m", "limit: 99999999999999999m", `:9: spec.configs[0].cpu.limit: cpu quantity "99999999999999999m": more than 4096 CPUs`},
		{"cpuset of ten million CPUs", "limit: 500m", `cpuset: "0-10000000"`, `:9: spec.configs[0].cpu.cpuset: cpu list "0-10000000": cpu 10000000: CPUs are numbered 0 to 4095`},
		{"instances 0", "    - name: a\n", "    - name: a\n      instances: 0\n", ":9: spec.configs[0].instances: 0: want 1 to 64"},
		{"repeats 0", "spec:\n", "spec:\n  repeats: 0\n", ":5: spec.repeats: 0: want 1 to 1000"},
		{"period 0", "limit: 500m", "limit: 500m, period: 0", ":9: spec.configs[0].cpu.period: 0s: want 1ms to 1s"},
		{"negative period", "limit: 500m", "limit: 500m, period: -100ms", ":9: spec.configs[0].cpu.period: period -100ms: want 1ms to 1s"},
		{"gomaxprocs 4abc", "    - name: a\n", "    - name: a\n      server: {gomaxprocs: \"4abc\"}\n", `:9: spec.configs[0].server.gomaxprocs: gomaxprocs "4abc": want host, automaxprocs, go or a number from 1 to 4096`},
		{"gomaxprocs 0x10", "    - name: a\n", "    - name: a\n      server: {gomaxprocs: \"0x10\"}\n", `:9: spec.configs[0].server.gomaxprocs: gomaxprocs "0x10"`},
		{"rate .inf", "rate: 20", "rate: .inf", ":6: spec.load.rate: rate +Inf: want a finite number of requests per second"},
		{"neighbour threads", "kind: noise}", "kind: noise, threads: 100000}", ":11: spec.neighbours[0].threads: 100000: want 1 to 4096"},
		{"burst workers", "kind: noise}", "kind: burst, workers: 100000}", ":11: spec.neighbours[0].workers: 100000: want 1 to 4096"},
		{"onoff sources", "mode: rate, rate: 20", "mode: onoff, sources: 1000000", ":6: spec.load.sources: 1000000: want 1 to 4096"},
		{"probe rate", "kind: noise}", "kind: probe, rate: 1e9}", ":11: spec.neighbours[0].rate: rate 1e+09: want 0.001 to 1e+06"},
		{"busy 1ns", "kind: noise}", "kind: burst, busy: 1ns}", ":11: spec.neighbours[0].busy: busy 1ns: want 1ms to 1h"},
		{"rate on a noise neighbour", "kind: noise}", "kind: noise, rate: 5}", ":11: spec.neighbours[0].rate: rate does not apply to a noise neighbour: it sets the request rate of a probe"},
		{"workers on a rate load", "duration: 1s}", "duration: 1s, workers: 8}", ":6: spec.load.workers: workers does not apply to mode rate"},
		{"duration without a unit", "duration: 1s", "duration: 5", `:6: spec.load.duration: "5" is not a duration: want a number with a unit`},
		{"duration that overflows", "duration: 1s", "duration: 9999999999h", `:6: spec.load.duration: "9999999999h" is not a duration`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(hostileSpec, tt.from) {
				t.Fatalf("test broken: %q not in the spec", tt.from)
			}
			spec := writeSpec(t, strings.Replace(hostileSpec, tt.from, tt.to, 1))
			for _, args := range [][]string{{"validate", spec}, {"run", spec, "--out", filepath.Join(t.TempDir(), "res")}, {"sim", spec, "--cores", "2", "--out", filepath.Join(t.TempDir(), "res")}} {
				start := time.Now()
				r := run(t, args...)
				took := time.Since(start)
				if r.code != 2 || !strings.Contains(r.stderr, spec+tt.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || r.stdout != "" {
					t.Errorf("%s: exit %d, stdout %q, stderr %q\nwant exit 2 and one line containing %q", args[0], r.code, r.stdout, r.stderr, spec+tt.want)
				}
				t.Logf("%s: %v", args[0], took) // timed in docs/spec.md; logged, not asserted
			}
		})
	}
}

// TestHostileSpecsWarned holds the cases where Kubernetes semantics change a
// value: validate and sim accept the spec, and say what takes effect.
func TestHostileSpecsWarned(t *testing.T) {
	tests := []struct {
		name, from, to, want string
	}{
		{"1 ms quota floor", "limit: 500m", "limit: 1m", ":9: spec.configs[0].cpu.limit: limit 1m with a 100ms period is a quota of 100us, under the kubelet's 1ms floor: it sets 1000us, which is 0.01 CPU"},
		{"short period", "limit: 500m", "limit: 500m, period: 1500us", ":9: spec.configs[0].cpu.limit: limit 500m with a 1.5ms period is a quota of 750us, under the kubelet's 1ms floor: it sets 1000us, which is 0.667 CPU"},
		{"millicore rounding", "limit: 500m", "limit: 0.2505", ":9: spec.configs[0].cpu.limit: 0.2505 is finer than a millicore: Kubernetes rounds it up to 251m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := writeSpec(t, strings.Replace(hostileSpec, tt.from, tt.to, 1))
			want := "throttlelab: warning: " + spec + tt.want
			r := run(t, "validate", spec, "--cores", "2")
			if r.code != 0 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stdout, "valid, ") {
				t.Errorf("validate: exit %d\n%s%s\nwant exit 0 and %q", r.code, r.stdout, r.stderr, want)
			}
			dir := filepath.Join(t.TempDir(), "sim")
			r = run(t, "sim", spec, "--cores", "2", "--out", dir)
			if r.code != 0 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stdout, "results in "+dir) {
				t.Errorf("sim: exit %d\n%s%s\nwant it to run, with %q", r.code, r.stdout, r.stderr, want)
			}
		})
	}
}

// TestValidate: the resolved experiment, as a person reads it (golden file;
// go test ./cmd/throttlelab -run TestValidate -update rewrites it), and the
// same from run --dry-run, which starts nothing.
func TestValidate(t *testing.T) {
	spec := writeSpec(t, `apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata: {name: shown, description: Every setting the table shows}
spec:
  workload: {request: burn, burn: cpu=2ms}
  loads:
    - {mode: rate, rate: 50, duration: 2s}
    - {name: steps, mode: ramp, ramp: "1:3", step: 1s}
  configs:
    - name: unlimited
    - name: limited
      instances: 2
      cpu: {request: 250m, limit: 500m, burst: 20ms}
      server: {gomaxprocs: go}
    - name: pinned
      cpu: {limit: "1", cpuset: "1"}
      server: {gomaxprocs: "3", single: true}
      neighbours: [{name: hog, kind: noise, threads: 2, cpu: {request: 100m}}]
  neighbours:
    - {name: watch, kind: probe, rate: 5}
  repeats: 2
  weightMapping: quadratic
`)
	r := run(t, "validate", spec, "--cores", "2")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	got := strings.ReplaceAll(r.stdout, spec, "SPEC")
	golden.Compare(t, filepath.Join("testdata", "validate.txt"), []byte(got))
	if r := run(t, "validate", spec, "--yaml", "--cores", "2"); r.code != 0 || !strings.Contains(r.stdout, "quota") && !strings.Contains(r.stdout, "gomaxprocs: go") {
		t.Errorf("--yaml: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// run --dry-run shows the same on this machine, and starts nothing.
	dir := filepath.Join(t.TempDir(), "res")
	r = run(t, "run", spec, "--dry-run", "--out", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "experiment shown: 12 runs (3 configs x 2 loads x 2 repeats, interleaved)") || !strings.Contains(r.stdout, "12 pinned/steps/r2") {
		t.Errorf("run --dry-run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("run --dry-run made %s", dir)
	}
	if r := run(t, "validate", "f01-logjam", "--quick", "--cores", "2"); r.code != 0 || !strings.Contains(r.stdout, "limited") {
		t.Errorf("validate a preset: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A cpuset this machine lacks: refused by validate and run, not by sim on a machine that has it.
	big := writeSpec(t, strings.Replace(hostileSpec, "limit: 500m", "limit: 500m, cpuset: 4095", 1))
	for _, args := range [][]string{{"validate", big, "--cores", "2"}, {"sim", big, "--cores", "2", "--dry-run"}, {"run", big, "--dry-run"}} {
		if r := run(t, args...); r.code != 2 || !strings.Contains(r.stderr, big+":9: spec.configs[0].cpu.cpuset: cpuset 4095 names CPU 4095, which a machine of ") {
			t.Errorf("%v: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	if r := run(t, "sim", big, "--cores", "4096", "--dry-run"); r.code != 0 {
		t.Errorf("sim --cores 4096 --dry-run: exit %d\n%s", r.code, r.stderr)
	}
}

// TestCommandLineRefusals: wrong argument counts, unknown subcommands and bad
// flag values exit 2 with one line, by the error's type (not its text).
func TestCommandLineRefusals(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"presets", "show"}, "throttlelab presets show takes 1 argument(s), got 0"},
		{[]string{"presets", "show", "a", "b"}, "takes 1 argument(s), got 2"},
		{[]string{"presets", "show", "f01-logjam", "--quick", "--cores", "-1"}, "--cores -1: want 1 to 4096"},
		{[]string{"presets", "show", "f01-logjam", "--quick", "--cores", "5000"}, "--cores 5000: want 1 to 4096"},
		{[]string{"presets", "show", "f01-logjam", "--cores", "2"}, "--cores scales the quick variant"},
		{[]string{"presets", "frob"}, `unknown command "frob" for "throttlelab presets"`},
		{[]string{"tiles", "frob"}, `unknown command "frob" for "throttlelab tiles"`},
		{[]string{"rn"}, `unknown command "rn" for "throttlelab" (did you mean run?)`},
		{[]string{"validate"}, "takes 1 argument(s), got 0"},
		{[]string{"validate", "nosuch"}, "neither a spec file nor a preset"},
		{[]string{"sim", "f01-logjam", "--cores", "-1"}, "--cores -1"},
		{[]string{"sim", "f01-logjam", "--ns-per-iteration", "inf"}, "--ns-per-iteration +Inf: must be a positive number"},
		{[]string{"run", "--resume", "/tmp", "--dry-run"}, "--dry-run checks a SPEC"},
		{[]string{"load", "--mode", "rate", "--rate", "inf", "--target", "http://127.0.0.1:1"}, `invalid argument "inf" for "--rate"`},
		{[]string{"load", "--mode", "rate", "--rate", "10", "--workers", "4", "--duration", "1s", "--target", "http://127.0.0.1:1"}, "--workers does not apply to mode rate"},
		{[]string{"load", "--mode", "image", "--burn", "cpu=1ms", "--target", "http://127.0.0.1:1"}, "--burn does not apply to --request tile"},
		{[]string{"load", "--mode", "rate", "--rate", "10", "--duration", "100000h", "--target", "http://127.0.0.1:1"}, "--duration 100000h0m0s: want 1ms to 24h"},
		{[]string{"burst", "--busy", "soon"}, `"soon" is not a duration`},
		{[]string{"burst", "--workers", "100000"}, "--workers 100000: want 1 to 4096"},
		{[]string{"noise", "--threads", "100000"}, "--threads 100000: want 0 (host CPUs) to 4096"},
		{[]string{"serve", "--gomaxprocs", "0x10"}, `--gomaxprocs "0x10": want host, automaxprocs, go or a number`},
		{[]string{"serve", "--burn-calibration", "inf"}, "--burn-calibration +Inf"},
	} {
		r := run(t, tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q: want exit 2 and one line containing %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
}

// TestRunFailsBeforeFirstRun: a run that cannot make its cgroups (as a user
// without root) says nothing was measured, points at no results directory,
// and leaves none behind.
func TestRunFailsBeforeFirstRun(t *testing.T) {
	needRoot(t) // to switch to another user
	os.Chmod(filepath.Dir(binary), 0o755)
	// A directory the other user may write in, as /tmp is.
	parent, err := os.MkdirTemp("", "tl-nobody")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(parent)
	os.Chmod(parent, 0o777)
	spec := filepath.Join(parent, "spec.yaml")
	if err := os.WriteFile(spec, []byte(hostileSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{spec, "f09-burn-flow"} {
		dir := filepath.Join(parent, "res-"+filepath.Base(arg))
		args := []string{"run", arg, "--out", dir}
		if arg == "f09-burn-flow" {
			args = append(args, "--quick")
		}
		cmd := exec.Command(binary, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		code := exitCode(cmd.Run())
		if code != 1 || !strings.Contains(errb.String(), "need root") || !strings.Contains(errb.String(), "failed before its first run finished: nothing was measured") ||
			strings.Contains(errb.String(), "kept in") || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
			t.Errorf("%s as nobody: exit %d\n%s%s", arg, code, out.String(), errb.String())
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%s as nobody left %s behind", arg, dir)
		}
	}
}
