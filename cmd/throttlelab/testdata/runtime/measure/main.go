// Command measure re-runs docs/runtimes.md's measured tables: the project's
// Go server at GOMAXPROCS N and the JVM service (../Service.java) at
// -XX:ActiveProcessorCount=N, each in its own cgroup v1 group (cpu and
// cpuacct) under one limit and the same open-loop load (Poisson arrivals
// of 5 ms burn requests), sampled by advise --pid. Every run keeps its
// files: advise's JSON, advise's samples (--save-csv), the load
// generator's requests.csv, the kernel's cpu.stat before and after, and
// the load average. The table step reads the run directories back and
// prints the rows, each p99 with its 95% bootstrap interval over the
// requests (and over runs with stats.Resample, runs paired by round).
//
// It needs root, a cgroup v1 host with cpu and cpuacct mounted at
// /sys/fs/cgroup/{cpu,cpuacct}, a built throttlelab, javac and java; hold
// the host lock while it runs (one round of six runs is about 8 minutes):
//
//	go build -o /tmp/tl ./cmd/throttlelab
//	flock /tmp/throttlelab-host.lock go run ./cmd/throttlelab/testdata/runtime/measure \
//	    run --bin /tmp/tl --out /tmp/rt --limit go=300m,jvm=300m --round 1
//	go run ./cmd/throttlelab/testdata/runtime/measure table /tmp/rt
//
// "bounds BIN DIR..." sets the predicted p99 added delay of each limited
// run beside the same samples replayed without the rebuild and the
// unlimited calibration run's samples replayed at that limit.
//
// "calibrate" runs each runtime once with no limit and its setting at 8
// and writes the limit and setting advise recommends (calibration.json);
// "run --limit advised" then uses those limits.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

const cgRoot = "/sys/fs/cgroup"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: measure calibrate|run|table|bounds [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "calibrate", "run":
		err = runCmd(os.Args[1], os.Args[2:])
	case "table":
		err = tableCmd(os.Args[2:])
	case "bounds":
		err = boundsCmd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown step %q: calibrate, run, table or bounds", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "measure:", err)
		os.Exit(1)
	}
}

// runSpec is one run: a runtime at a setting under a limit.
type runSpec struct {
	Runtime    string  `json:"runtime"` // go or jvm
	Setting    int     `json:"setting"`
	LimitMilli int64   `json:"limit_millicores"` // 0: none
	Round      int     `json:"round"`
	RateRPS    float64 `json:"rate_rps"`
	BurnMs     float64 `json:"burn_ms"`
	Seconds    float64 `json:"advise_seconds"`
	Cores      int     `json:"advise_cores"`
	// Shares is the group's cpu.shares (0: the kernel's 1024): a larger
	// weight lets the service's threads win the CPUs from other work on a
	// shared host, to tell that work's delay from the limit's.
	Shares int `json:"cpu_shares,omitempty"`
}

// runResult is what a run measured beside its files.
type runResult struct {
	runSpec
	Start          time.Time `json:"start"`
	LoadavgStart   string    `json:"loadavg_start"`
	LoadavgEnd     string    `json:"loadavg_end"`
	Ready          string    `json:"ready"`
	KernelPeriods  uint64    `json:"kernel_nr_periods"`
	KernelThrottle uint64    `json:"kernel_nr_throttled"`
	KernelThrotNs  uint64    `json:"kernel_throttled_time_ns"`
}

func runCmd(step string, args []string) error {
	fs := flag.NewFlagSet(step, flag.ContinueOnError)
	bin := fs.String("bin", "", "the built throttlelab binary")
	out := fs.String("out", "", "directory for the runs")
	limits := fs.String("limit", "go=300m,jvm=300m", "limit per runtime (go=300m,jvm=1200m), or advised (calibration.json in --out)")
	settings := fs.String("settings", "1,2,8", "settings, in this order within a round")
	runtimes := fs.String("runtimes", "go,jvm", "runtimes, alternating within a round")
	round := fs.Int("round", 1, "round number (the runs of a round are paired in the table)")
	rate := fs.Float64("rate", 40, "requests per second")
	burn := fs.Float64("burn", 5, "CPU per request, ms")
	secs := fs.Float64("seconds", 60, "advise's sampling, s (the load runs 5 s before and 3 s after)")
	shares := fs.Int("shares", 0, "the groups' cpu.shares (0: the kernel's 1024)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bin == "" || *out == "" {
		return errors.New("--bin and --out are required")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	classes, err := compileService(*out)
	if err != nil {
		return err
	}
	var specs []runSpec
	rts := strings.Split(*runtimes, ",")
	if step == "calibrate" {
		for _, rt := range rts {
			specs = append(specs, runSpec{Runtime: rt, Setting: 8})
		}
	} else {
		lim, err := parseLimits(*limits, *out)
		if err != nil {
			return err
		}
		for _, s := range strings.Split(*settings, ",") {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return fmt.Errorf("setting %q: want a positive count", s)
			}
			for _, rt := range rts {
				m, ok := lim[rt]
				if !ok {
					return fmt.Errorf("no limit for runtime %q in --limit %s", rt, *limits)
				}
				specs = append(specs, runSpec{Runtime: rt, Setting: n, LimitMilli: m})
			}
		}
	}
	var cal []map[string]any
	for _, s := range specs {
		s.Round, s.RateRPS, s.BurnMs, s.Seconds, s.Shares = *round, *rate, *burn, *secs, *shares
		s.Cores = min(s.Setting, 2)
		dir := filepath.Join(*out, fmt.Sprintf("%s-%s-%d-%dm-r%d", step, s.Runtime, s.Setting, s.LimitMilli, s.Round))
		if s.Shares > 0 {
			dir += fmt.Sprintf("-shares%d", s.Shares)
		}
		fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().UTC().Format("15:04:05"), dir)
		if err := oneRun(*bin, classes, dir, s); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		if step == "calibrate" {
			a, err := readAdvise(dir)
			if err != nil {
				return err
			}
			cal = append(cal, map[string]any{"runtime": s.Runtime, "limit_millicores": a.RecMilli, "recommended_setting": a.RecSetting, "dir": dir})
		}
	}
	if step == "calibrate" {
		b, _ := json.MarshalIndent(cal, "", "  ")
		return os.WriteFile(filepath.Join(*out, "calibration.json"), b, 0o644)
	}
	return nil
}

// parseLimits reads "go=300m,jvm=1200m" or "advised".
func parseLimits(s, out string) (map[string]int64, error) {
	m := map[string]int64{}
	if s == "advised" {
		b, err := os.ReadFile(filepath.Join(out, "calibration.json"))
		if err != nil {
			return nil, fmt.Errorf("--limit advised: %w: run the calibrate step first", err)
		}
		var cal []struct {
			Runtime string `json:"runtime"`
			Limit   int64  `json:"limit_millicores"`
		}
		if err := json.Unmarshal(b, &cal); err != nil {
			return nil, err
		}
		for _, c := range cal {
			m[c.Runtime] = c.Limit
		}
		return m, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.ParseInt(strings.TrimSuffix(v, "m"), 10, 64)
		if !ok || err != nil || !strings.HasSuffix(v, "m") || n <= 0 {
			return nil, fmt.Errorf("--limit %q: want RUNTIME=NNNm", kv)
		}
		m[k] = n
	}
	return m, nil
}

func compileService(out string) (string, error) {
	dir := filepath.Join(out, "classes")
	src, err := filepath.Abs(filepath.Join(filepath.Dir(thisDir()), "Service.java"))
	if err != nil {
		return "", err
	}
	if b, err := exec.Command("javac", "-d", dir, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("javac %s: %w\n%s", src, err, b)
	}
	return dir, nil
}

// thisDir is the measure directory (go run from the module's root).
func thisDir() string {
	if _, err := os.Stat("cmd/throttlelab/testdata/runtime/measure"); err == nil {
		return "cmd/throttlelab/testdata/runtime/measure"
	}
	return "."
}

// oneRun makes the groups, starts the service in them, drives the load,
// runs advise and removes everything on every path.
func oneRun(bin, classes, dir string, s runSpec) (err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	name := "throttlelab-rtval-" + filepath.Base(dir)
	cpu, acct := filepath.Join(cgRoot, "cpu", name), filepath.Join(cgRoot, "cpuacct", name)
	for _, d := range []string{cpu, acct} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("making the group: %w", err)
		}
		defer removeGroup(d)
	}
	quota := "-1"
	if s.LimitMilli > 0 {
		quota = strconv.FormatInt(s.LimitMilli*100, 10) // 100 ms period
	}
	if err := os.WriteFile(filepath.Join(cpu, "cpu.cfs_period_us"), []byte("100000"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cpu, "cpu.cfs_quota_us"), []byte(quota), 0o644); err != nil {
		return err
	}
	if s.Shares > 0 {
		if err := os.WriteFile(filepath.Join(cpu, "cpu.shares"), []byte(strconv.Itoa(s.Shares)), 0o644); err != nil {
			return err
		}
	}
	var argv, env []string
	n := strconv.Itoa(s.Setting)
	switch s.Runtime {
	case "go":
		argv = []string{bin, "serve", "--listen", "127.0.0.1:0", "--gomaxprocs", n}
		env = []string{"GOMAXPROCS=" + n}
	case "jvm":
		argv = []string{"java", "-XX:ActiveProcessorCount=" + n, "-cp", classes, "Service"}
	default:
		return fmt.Errorf("runtime %q: go or jvm", s.Runtime)
	}
	sh := append([]string{"-c", fmt.Sprintf("echo $$ > %s/cgroup.procs && echo $$ > %s/cgroup.procs && exec \"$@\"", cpu, acct), "sh"}, argv...)
	cmd := exec.Command("sh", sh...)
	cmd.Env = append(os.Environ(), env...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return fmt.Errorf("the service said nothing: %w", err)
	}
	go io.Copy(io.Discard, stdout)
	url := regexp.MustCompile(`http://[0-9.]+:[0-9]+`).FindString(line)
	if url == "" {
		return fmt.Errorf("no address in %q", line)
	}
	r := runResult{runSpec: s, Start: time.Now().UTC(), LoadavgStart: loadavg(), Ready: strings.TrimSpace(line)}
	loadFor := time.Duration((s.Seconds + 8) * float64(time.Second))
	load := exec.Command(bin, "load", "--mode", "rate", "--rate", fmt.Sprint(s.RateRPS), "--arrivals", "poisson", "--request", "burn",
		"--burn", fmt.Sprintf("cpu=%gms", s.BurnMs), "--target", url, "--duration", loadFor.String(), "--timeout", "10s",
		"--seed", strconv.Itoa(s.Round), "--out", filepath.Join(dir, "load"))
	load.Stdout, load.Stderr = io.Discard, io.Discard
	if err := load.Start(); err != nil {
		return err
	}
	defer func() {
		if load.ProcessState == nil {
			load.Process.Kill()
			load.Wait()
		}
	}()
	time.Sleep(5 * time.Second) // a measurement, not a test: the load's first seconds left out
	before, err := readStat(cpu)
	if err != nil {
		return err
	}
	adv := []string{"advise", "--pid", strconv.Itoa(cmd.Process.Pid), "--duration", fmt.Sprintf("%gs", s.Seconds), "--cores", strconv.Itoa(s.Cores),
		"--save-csv", filepath.Join(dir, "samples.csv"), "-o", "json"}
	if s.LimitMilli > 0 {
		adv = append(adv, "--limit", fmt.Sprintf("%dm", s.LimitMilli))
	}
	a := exec.Command(bin, adv...)
	a.Stderr = os.Stderr
	js, aerr := a.Output()
	if aerr != nil && (a.ProcessState == nil || a.ProcessState.ExitCode() != 1) {
		return fmt.Errorf("advise: %w", aerr)
	}
	if err := os.WriteFile(filepath.Join(dir, "advise.json"), js, 0o644); err != nil {
		return err
	}
	after, err := readStat(cpu)
	if err != nil {
		return err
	}
	if err := load.Wait(); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	r.KernelPeriods = after["nr_periods"] - before["nr_periods"]
	r.KernelThrottle = after["nr_throttled"] - before["nr_throttled"]
	r.KernelThrotNs = after["throttled_time"] - before["throttled_time"]
	r.LoadavgEnd = loadavg()
	b, _ := json.MarshalIndent(r, "", "  ")
	return os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644)
}

// removeGroup removes a group once its processes are gone.
func removeGroup(d string) {
	for i := 0; i < 100; i++ {
		if err := os.Remove(d); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "measure: could not remove %s: remove it by hand\n", d)
}

func readStat(cpu string) (map[string]uint64, error) {
	b, err := os.ReadFile(filepath.Join(cpu, "cpu.stat"))
	if err != nil {
		return nil, err
	}
	m := map[string]uint64{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, " "); ok {
			m[k], _ = strconv.ParseUint(v, 10, 64)
		}
	}
	return m, nil
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
