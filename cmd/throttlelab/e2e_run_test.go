package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/stats"
	"github.com/throttlelab/throttlelab/testenv"
)

// needRoot skips a test that runs experiments in real cgroups where the host
// cannot (in CI it fails: there every real-cgroup test must run).
func needRoot(t *testing.T) {
	t.Helper()
	cgrouptest.Require(t)
	if _, err := os.Stat("/bin/sh"); err != nil {
		cgrouptest.Unavailable(t, "no /bin/sh")
	}
}

func readExpSummary(t *testing.T, dir string) record.ExperimentSummary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s record.ExperimentSummary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// servePIDs returns the serve processes started from the test binary whose
// arguments contain match ("" for all of them).
func servePIDs(match string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.HasPrefix(b, []byte(binary+"\x00serve")) && bytes.Contains(b, []byte(match)) {
			pid, _ := strconv.Atoi(strings.Split(p, "/")[2])
			pids = append(pids, pid)
		}
	}
	return pids
}

// writeSpec writes an experiment spec into a temporary file.
func writeSpec(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ourLeftovers lists processes started from the test binary's throttlelab and
// cgroup directories of throttlelab runs, which a finished or killed run must
// not leave behind.
func ourLeftovers(t *testing.T) []string {
	t.Helper()
	var left []string
	for _, pid := range servePIDs("") {
		left = append(left, "process "+strconv.Itoa(pid))
	}
	for _, root := range []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/cpuset", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		dirs, _ := filepath.Glob(filepath.Join(root, "throttlelab", "*"))
		for _, d := range dirs {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				left = append(left, "cgroup "+d)
			}
		}
	}
	return left
}

// emulatedLimits is examples/limits.yaml with a contrast that holds under
// software emulation (see TestRunExample).
const emulatedLimits = `apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata:
  name: limits
spec:
  workload:
    request: burn
    burn: cpu=20ms
  load:
    mode: rate
    rate: 10
    arrivals: poisson
    duration: 5s
  balancer: random
  configs:
    - name: unlimited
      instances: 1
    - name: limited
      instances: 2
      cpu:
        request: 100m
        limit: 100m
  repeats: 2
  order: interleaved
  warmup: 1s
`

// TestRunExample is the definition of done: the example experiment
// shows throttled periods and a worse p99 for the limited config.
func TestRunExample(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	spec := "../../examples/limits.yaml"
	if testenv.Emulated() {
		// Under software emulation the example's 100 requests/s saturate
		// the guest (HTTP and the load generator cost several times the
		// host's CPU), so both configs queue for seconds and their p99s
		// differ by chance. Here each request burns 20 ms of CPU against a
		// quota of 10 ms per 100 ms period: every request of the limited
		// config must wait for a later period, whatever the emulation
		// costs, and the load (0.2 cores) leaves the unlimited one unqueued.
		spec = writeSpec(t, emulatedLimits)
	}
	r := run(t, "run", spec, "--out", dir)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s := readExpSummary(t, dir)
	if len(s.Configs) != 2 || len(s.Runs) != 4 {
		t.Fatalf("summary: %d configs, %d runs", len(s.Configs), len(s.Runs))
	}
	unl, lim := s.Configs[0], s.Configs[1]
	if unl.ThrottledPct != 0 || lim.ThrottledPct <= 0 || lim.ThrottledMs <= 0 {
		t.Errorf("throttling: unlimited %.1f%%, limited %.1f%% (%.1f ms)", unl.ThrottledPct, lim.ThrottledPct, lim.ThrottledMs)
	}
	t.Logf("p50/p99: unlimited %.2f/%.2f ms, limited %.2f/%.2f ms, limited throttled %.1f%%", unl.P50Ms, unl.P99Ms, lim.P50Ms, lim.P99Ms, lim.ThrottledPct)
	if lim.P99Ms <= unl.P99Ms {
		t.Errorf("p99: limited %.2f ms, unlimited %.2f ms: want the limited one worse", lim.P99Ms, unl.P99Ms)
	}
	// Every percentile and ratio has an interval that holds its point.
	for _, c := range s.Configs {
		for _, f := range []struct {
			name  string
			point float64
			iv    *stats.Interval
		}{{"p50", c.P50Ms, c.P50MsCI95}, {"p99", c.P99Ms, c.P99MsCI95}, {"p99.9", c.P999Ms, c.P999MsCI95}, {"p99/ref", c.P99VsReference, c.P99VsReferenceCI95}} {
			if f.iv == nil || !f.iv.Contains(f.point) {
				t.Errorf("%s %s %.3f: interval %v", c.Config, f.name, f.point, f.iv)
			}
		}
	}
	// Repeats have their own seeds; the configs of a repeat share one.
	seeds := map[int]uint64{}
	for _, run := range s.Runs {
		if prev, ok := seeds[run.Repeat]; ok && prev != run.Seed {
			t.Errorf("repeat %d: seeds %d and %d", run.Repeat, prev, run.Seed)
		}
		seeds[run.Repeat] = run.Seed
	}
	if seeds[1] == seeds[2] || seeds[1] == 0 {
		t.Errorf("repeat seeds %v: want two different ones", seeds)
	}
	for _, f := range []string{"spec.yaml", "env.json", "runs/limited/load0/r2/requests.csv", "runs/limited/load0/r2/usage.csv", "runs/limited/load0/r2/throttled.csv", "runs/limited/load0/r2/latency.hdr", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	if !strings.Contains(r.stdout, "p99/ref") || !strings.Contains(r.stdout, "report: "+filepath.Join(dir, "report.html")) || !strings.Contains(r.stderr, "run 4/4") {
		t.Errorf("no progress or table:\n%s%s", r.stdout, r.stderr)
	}
	if left := ourLeftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

const smallSpec = `apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata: {name: killme}
spec:
  workload: {request: burn, burn: cpu=2ms}
  load: {mode: rate, rate: 50, duration: 2s}
  configs:
    - name: a
    - name: b
      instances: 2
      cpu: {limit: 300m}
  repeats: 2
`

// TestRunKillAndResume interrupts an experiment mid-run: nothing may be left
// running or mounted, finished runs stay, and --resume finishes the rest.
func TestRunKillAndResume(t *testing.T) {
	needRoot(t)
	spec := writeSpec(t, smallSpec)
	dir := filepath.Join(t.TempDir(), "res")
	cmd := exec.Command(binary, "run", spec, "--out", dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Once the first run is written and the second has its instances running.
	waitFor(t, func() bool {
		_, err := os.Stat(filepath.Join(dir, "runs/a/load0/r1/summary.json"))
		return err == nil && len(ourLeftovers(t)) > 0
	})
	cmd.Process.Signal(syscall.SIGTERM)
	code := exitCode(cmd.Wait())
	if code != 130 || !strings.Contains(out.String(), "--resume") {
		t.Errorf("exit %d after SIGTERM\n%s%s", code, out.String(), errb.String())
	}
	if left := ourLeftovers(t); len(left) > 0 {
		t.Fatalf("left behind after SIGTERM: %v", left)
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, "runs/*/*/.tmp-*"))
	if len(tmps) > 0 {
		t.Errorf("half-written runs left: %v", tmps)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs/a/load0/r1/summary.json")); err != nil {
		t.Error("the finished run was lost")
	}

	r := run(t, "run", "--resume", dir)
	if r.code != 0 || !strings.Contains(r.stderr, "run 1/4 a/load0/r1: done before, kept") {
		t.Fatalf("resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s := readExpSummary(t, dir)
	if len(s.Runs) != 4 || len(s.Configs) != 2 || s.Configs[1].Repeats != 2 {
		t.Errorf("after resume: %d runs, configs %+v", len(s.Runs), s.Configs)
	}
	if left := ourLeftovers(t); len(left) > 0 {
		t.Errorf("left behind after resume: %v", left)
	}
}

func TestRunBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte(strings.Replace(smallSpec, "limit: 300m", "limit: lots", 1)), 0o644)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "give an experiment spec"},
		{[]string{"run", "/nonexistent.yaml"}, "no such spec file"},
		{[]string{"run", bad}, "bad.yaml:11: spec.configs[1].cpu.limit"},
		{[]string{"run", bad, "--resume", "/tmp"}, "not both"},
		{[]string{"run", "--resume", "/nonexistent"}, "--resume"},
	}
	for _, tt := range tests {
		r := run(t, tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q: want exit 2 and one line containing %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
}

// TestRunNeighbours runs a config beside a limited CPU hog and a probe.
func TestRunNeighbours(t *testing.T) {
	needRoot(t)
	spec := writeSpec(t, `apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata: {name: neighbours}
spec:
  workload: {request: api}
  load: {mode: rate, rate: 20, duration: 1s}
  configs: [{name: svc}]
  neighbours:
    - {name: hog, kind: noise, threads: 1, cpu: {limit: 200m}}
    - {name: watch, kind: probe, rate: 20}
    - {name: pulse, kind: burst, workers: 1, busy: 50ms, sleep: 100ms}
`)
	dir := t.TempDir()
	r := run(t, "run", spec, "--out", dir)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s := readExpSummary(t, dir)
	rs := s.Runs[0]
	var hog *struct{ throttled uint64 }
	for name, st := range rs.Neighbours {
		if strings.HasSuffix(name, "-n-hog") {
			hog = &struct{ throttled uint64 }{st.ThrottledPeriods}
		}
	}
	// A spinning thread at 0.2 CPU is throttled nearly every period.
	if hog == nil || hog.throttled == 0 {
		t.Errorf("noise neighbour: %+v", rs.Neighbours)
	}
	if rs.Probe == nil || rs.Probe.Requests < 10 || rs.Probe.OK != rs.Probe.Requests {
		t.Errorf("probe neighbour: %+v", rs.Probe)
	}
	// Nothing measured is lost: the probe's records and the burst worker's cycles.
	probe, _ := os.ReadFile(filepath.Join(dir, "runs/svc/load0/r1/probe.csv"))
	if n := bytes.Count(probe, []byte("\n")) - 1; int64(n) != rs.Probe.Requests {
		t.Errorf("probe.csv has %d records, the probe sent %d", n, rs.Probe.Requests)
	}
	cycles, _ := os.ReadFile(filepath.Join(dir, "runs/svc/load0/r1/burst-pulse.jsonl"))
	if !bytes.Contains(cycles, []byte(`"iterations"`)) {
		t.Errorf("burst-pulse.jsonl: %q", cycles)
	}
	if left := ourLeftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestRunWithoutRoot runs the binary as an unprivileged user: it must stop with a
// message that says root is needed, and leave nothing.
func TestRunWithoutRoot(t *testing.T) {
	needRoot(t) // to switch to another user
	os.Chmod(filepath.Dir(binary), 0o755)
	cmd := exec.Command(binary, "run", "../../examples/limits.yaml", "--out", filepath.Join(os.TempDir(), "tl-noroot"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Dir, _ = os.Getwd()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "need root") || !strings.Contains(string(out), "throttlelab sim SPEC") {
		t.Errorf("as nobody: %v\n%s", err, out)
	}
}

// TestRunCrashedInstance kills an instance mid-run: the runner says which one,
// fails, and still removes every process and group.
func TestRunCrashedInstance(t *testing.T) {
	needRoot(t)
	spec := writeSpec(t, `apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata: {name: crash}
spec:
  workload: {request: api}
  load: {mode: rate, rate: 50, duration: 3s}
  configs: [{name: victim, instances: 2}]
`)
	res := t.TempDir()
	cmd := exec.Command(binary, "run", spec, "--out", res)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The runner creates the run's requests.csv when the instances are healthy
	// and the load starts: only then is the kill a crash mid-run.
	waitFor(t, func() bool {
		_, err := os.Stat(filepath.Join(res, "runs/victim/load0/.tmp-r1/requests.csv"))
		return err == nil
	})
	var victim []int
	waitFor(t, func() bool { victim = servePIDs("victim-1"); return len(victim) == 1 })
	syscall.Kill(victim[0], syscall.SIGKILL)
	code := exitCode(cmd.Wait())
	if code != 1 || !strings.Contains(errb.String(), "instance victim-1 stopped during the run") {
		t.Errorf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	if left := ourLeftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestRunKilledOutright: SIGKILL gives the runner no chance to clean up. Its
// instances die with it (PDEATHSIG); the next run removes the groups it left.
func TestRunKilledOutright(t *testing.T) {
	needRoot(t)
	spec := writeSpec(t, `apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata: {name: killed}
spec:
  workload: {request: api}
  load: {mode: rate, rate: 20, duration: 5s}
  configs: [{name: a, instances: 2}]
`)
	cmd := exec.Command(binary, "run", spec, "--out", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(servePIDs("")) == 2 })
	cmd.Process.Kill()
	cmd.Wait()
	waitFor(t, func() bool { return len(servePIDs("")) == 0 })
	// The groups are still there; the next run removes them.
	r := run(t, "run", "--out", t.TempDir(), spec)
	if r.code != 0 || !strings.Contains(r.stderr, "removed the cgroups of a run that was killed") {
		t.Errorf("next run: exit %d\n%s", r.code, r.stderr)
	}
	if left := ourLeftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestRunRampWarmup: a ramp of burns with a warm-up (the warm-up is a closed
// loop at the ramp's top, whatever the requests are).
func TestRunRampWarmup(t *testing.T) {
	needRoot(t)
	spec := writeSpec(t, `apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata: {name: rampwarm}
spec:
  workload: {request: burn, burn: cpu=1ms}
  load: {mode: ramp, ramp: "1:2", step: 500ms}
  configs: [{name: a, cpu: {limit: 500m}}]
  warmup: 200ms
`)
	dir := filepath.Join(t.TempDir(), "res")
	if r := run(t, "run", spec, "--out", dir); r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if s := readExpSummary(t, dir); len(s.Runs) != 1 || len(s.Runs[0].Summary.Steps) != 2 {
		t.Errorf("summary %+v", s.Runs)
	}
}

// TestRunSeesOtherWork: a run measures the CPU other work took from the host
// meanwhile (host_other_cores) and says when it was more than a tenth of the
// machine: a spinning shell outside the run's groups is seen.
func TestRunSeesOtherWork(t *testing.T) {
	needRoot(t)
	spec := writeSpec(t, `apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata: {name: other-work}
spec:
  workload: {request: api}
  load: {mode: rate, rate: 20, duration: 2s}
  configs: [{name: svc}]
`)
	quiet := t.TempDir()
	if r := run(t, "run", spec, "--out", quiet); r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	q := readExpSummary(t, quiet).Runs[0]
	if q.HostOtherCores == nil || *q.HostOtherCores < 0 {
		t.Fatalf("no host_other_cores in a local run: %v", q.HostOtherCores)
	}
	spin := exec.Command("sh", "-c", "while :; do :; done")
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { spin.Process.Kill(); spin.Wait() }()
	busy := t.TempDir()
	r := run(t, "run", spec, "--out", busy)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	b := readExpSummary(t, busy).Runs[0]
	t.Logf("other work: %.3f cores on a quiet host, %.3f beside a spinning shell", *q.HostOtherCores, *b.HostOtherCores)
	// The shell spins on a core of its own most of the time: well over half.
	if b.HostOtherCores == nil || *b.HostOtherCores < 0.5 {
		t.Errorf("beside a spinning shell, host_other_cores %v", b.HostOtherCores)
	}
	if !strings.Contains(r.stderr, "other work on the host used") {
		t.Errorf("no warning of the other work:\n%s", r.stderr)
	}
}
