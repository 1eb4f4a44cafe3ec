// Command loadgen benchmarks throttlelab load against wrk, hey (if installed)
// and a plain net/http Go client on the same /api server (throttlelab serve,
// pinned to CPU 0) in one session, the load generators pinned to CPU 1 with one
// thread (wrk -t1, GOMAXPROCS=1):
//
//   - closed loop at the same concurrency: throughput, generator CPU per
//     request and p50/p99, against wrk (goal: throttlelab/wrk >= 0.8) and hey;
//   - on/off sources sending back to back while ON: throughput against
//     bench/loadgen/goclient, a plain net/http client running the same sources
//     (goal: at least on par);
//   - open loop at the same fixed rate: p50/p99 (throttlelab load --mode rate;
//     hey -q per worker; wrk paced by a Lua delay(), as Debian's wrk has no -R).
//
// Rounds alternate the tools so that a noisy machine hits them alike; each
// ratio is printed per round (its spread) and over the rounds' medians.
//
//	make build && go run ./bench/loadgen [-rounds 3] [-duration 5s] [-rate 1000]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"time"

	"github.com/throttlelab/throttlelab/bench/internal/harness"
	"github.com/throttlelab/throttlelab/loadgen"
)

// sample is one run of one tool: its throughput, latency, and its own CPU time
// (user + system, from the process's rusage) per request: what the load
// generator costs, which a noisy machine moves far less than throughput.
type sample struct{ rps, p50, p99, cpuUs, p50FromSend float64 }

// cpuPerRequest returns the finished process's CPU time per request in us.
func cpuPerRequest(cmd *exec.Cmd, requests float64) float64 {
	if cmd.ProcessState == nil || requests <= 0 {
		return 0
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return float64(cpu) / float64(time.Microsecond) / requests
}

type bench struct {
	bin, hey string
	goclient string
	url      string
	dir      string
	d        time.Duration
}

func main() {
	bin := flag.String("bin", "bin/throttlelab", "throttlelab binary (make build)")
	hey := flag.String("hey", "", "hey binary (default: hey on PATH or in $HOME/go/bin; left out if missing)")
	rounds := flag.Int("rounds", 3, "alternating rounds")
	d := flag.Duration("duration", 5*time.Second, "duration of each run")
	conns := flag.Int("concurrency", 32, "closed loop: connections / workers")
	rate := flag.Float64("rate", 1000, "open loop: requests per second")
	rateConns := flag.Int("rate-connections", 10, "open loop: connections for wrk and workers for hey")
	sources := flag.Int("sources", 16, "on/off: sources")
	on := flag.Duration("on", 100*time.Millisecond, "on/off: mean ON period")
	off := flag.Duration("off", 100*time.Millisecond, "on/off: mean OFF period")
	flag.Parse()
	if err := run(*bin, *hey, *rounds, *d, *conns, *rate, *rateConns, *sources, *on, *off); err != nil {
		fmt.Fprintln(os.Stderr, "bench/loadgen:", err)
		os.Exit(1)
	}
}

func findHey(flagPath string) (string, error) {
	if flagPath != "" {
		return flagPath, nil
	}
	if p, err := exec.LookPath("hey"); err == nil {
		return p, nil
	}
	home, _ := os.UserHomeDir()
	if p := filepath.Join(home, "go", "bin", "hey"); fileExists(p) {
		return p, nil
	}
	return "", fmt.Errorf("hey is not installed: go install github.com/rakyll/hey@v0.1.5")
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

var (
	heyRPS = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	// hey v0.1.5 prints "50%% in 0.0003 secs" (a doubled percent sign).
	heyPct = regexp.MustCompile(`(?m)^\s+(50|99)%{1,2} in ([0-9.]+) secs`)
)

// heyRun runs hey pinned to CPU 1 with one thread; qps > 0 limits each worker.
func (b *bench) heyRun(workers int, qps float64) (sample, error) {
	args := []string{b.hey, "-c", strconv.Itoa(workers), "-z", b.d.String()}
	if qps > 0 {
		args = append(args, "-q", strconv.FormatFloat(qps, 'f', -1, 64))
	}
	args = harness.Pin(1, append(args, b.url+"/api")...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return sample{}, fmt.Errorf("hey: %v\n%s", err, out)
	}
	var s sample
	m := heyRPS.FindSubmatch(out)
	if m == nil {
		return s, fmt.Errorf("no Requests/sec in hey output:\n%s", out)
	}
	s.rps, _ = strconv.ParseFloat(string(m[1]), 64)
	s.cpuUs = cpuPerRequest(cmd, s.rps*b.d.Seconds())
	for _, p := range heyPct.FindAllSubmatch(out, -1) {
		v := harness.ToMs(string(p[2]), "secs")
		if string(p[1]) == "50" {
			s.p50 = v
		} else {
			s.p99 = v
		}
	}
	return s, nil
}

// wrkRun runs wrk; with rate > 0 each connection waits conns/rate between
// requests (a closed loop paced to about the rate).
func (b *bench) wrkRun(conns int, rate float64) (sample, error) {
	var extra []string
	if rate > 0 {
		script := filepath.Join(b.dir, "pace.lua")
		body := fmt.Sprintf("function delay()\n  return %g\nend\n", 1000*float64(conns)/rate)
		if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
			return sample{}, err
		}
		extra = []string{"-s", script}
	}
	var st *os.ProcessState
	w, err := harness.WrkState(1, b.url+"/api", b.d, conns, &st, extra...)
	s := sample{rps: w.RPS, p50: w.P50Ms, p99: w.P99Ms}
	if st != nil {
		s.cpuUs = cpuPerRequest(&exec.Cmd{ProcessState: st}, w.Requests)
	}
	return s, err
}

// tlRun runs throttlelab load and reads its summary.
func (b *bench) tlRun(args ...string) (sample, error) {
	out := filepath.Join(b.dir, "tl")
	os.RemoveAll(out)
	all := append([]string{b.bin, "load", "--target", b.url, "--request", "api", "--gomaxprocs", "1", "--out", out}, args...)
	all = harness.Pin(1, all...)
	cmd := exec.Command(all[0], all[1:]...)
	if o, err := cmd.CombinedOutput(); err != nil {
		return sample{}, fmt.Errorf("throttlelab load: %v\n%s", err, o)
	}
	raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		return sample{}, err
	}
	var s loadgen.Totals
	if err := json.Unmarshal(raw, &s); err != nil {
		return sample{}, err
	}
	fromSend, err := p50FromSend(filepath.Join(out, "requests.csv"))
	if err != nil {
		return sample{}, err
	}
	return sample{s.ThroughputRPS, s.Latency.P50, s.Latency.P99, cpuPerRequest(cmd, float64(s.Requests)), fromSend}, nil
}

// p50FromSend is the median of latency - (start - intended) over a load's
// records: the latency counted from the actual send, as wrk and hey count it.
func p50FromSend(path string) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	recs, err := loadgen.ReadRecords(f)
	if err != nil {
		return 0, err
	}
	return harness.Median(recs, func(r loadgen.Record) float64 {
		return float64(r.Latency-(r.Start-r.Intended)) / float64(time.Millisecond)
	}), nil
}

// goclientRun runs the plain net/http reference with on/off sources.
func (b *bench) goclientRun(sources int, on, off time.Duration) (sample, error) {
	args := harness.Pin(1, b.goclient, "-url", b.url+"/api", "-sources", strconv.Itoa(sources),
		"-on", on.String(), "-off", off.String(), "-duration", b.d.String())
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	out, err := cmd.Output()
	if err != nil {
		return sample{}, fmt.Errorf("goclient: %v\n%s", err, out)
	}
	var r struct {
		Requests, Errors int64
		RPS              float64
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return sample{}, fmt.Errorf("goclient printed %q: %w", out, err)
	}
	if r.Errors > 0 {
		return sample{}, fmt.Errorf("goclient: %d of %d requests failed", r.Errors, r.Requests)
	}
	return sample{rps: r.RPS, cpuUs: cpuPerRequest(cmd, float64(r.Requests))}, nil
}

// tool is one load generator in one scenario.
type tool struct {
	name string
	run  func() (sample, error)
}

// ratios prints the ratio of tool a to tool b per round (the spread) and of
// their medians, against a goal if goal > 0 (higher is better).
func ratios(what string, a, b []sample, f func(sample) float64, goal float64) {
	per := make([]string, len(a))
	lo, hi := 0.0, 0.0
	for i := range a {
		r := f(a[i]) / f(b[i])
		per[i] = fmt.Sprintf("%.3f", r)
		if i == 0 || r < lo {
			lo = r
		}
		if i == 0 || r > hi {
			hi = r
		}
	}
	med := harness.Median(a, f) / harness.Median(b, f)
	if goal <= 0 {
		fmt.Printf("%s = %.3f (rounds %v, spread %.3f-%.3f)\n", what, med, per, lo, hi)
		return
	}
	verdict := "met"
	if med < goal {
		verdict = "NOT met"
	}
	fmt.Printf("%s = %.3f (rounds %v, spread %.3f-%.3f; goal >= %g: %s)\n", what, med, per, lo, hi, goal, verdict)
}

func run(bin, heyFlag string, rounds int, d time.Duration, conns int, rate float64, rateConns, sources int, on, off time.Duration) error {
	if _, err := exec.LookPath("wrk"); err != nil {
		return fmt.Errorf("wrk is not installed: apt-get install wrk")
	}
	hey, heyErr := findHey(heyFlag)
	if heyErr != nil {
		fmt.Fprintf(os.Stderr, "bench/loadgen: %v; going on without it\n", heyErr)
	}
	if !fileExists(bin) {
		return fmt.Errorf("%s not found: run make build first", bin)
	}
	dir, err := os.MkdirTemp("", "bench-loadgen")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	goclient := filepath.Join(dir, "goclient")
	_, self, _, _ := runtime.Caller(0)
	build := exec.Command("go", "build", "-o", goclient, "./goclient")
	build.Dir = filepath.Dir(self)
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building the Go reference client: %v\n%s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, srv, err := harness.StartServer(ctx, harness.Pin(0, bin, "serve", "--listen", "127.0.0.1:0", "--name", "bench", "--gomaxprocs", "1", "--burn-calibration", "1000000"), "/api")
	if err != nil {
		return err
	}
	defer harness.Stop(srv)
	b := &bench{bin: bin, hey: hey, goclient: goclient, url: url, dir: dir, d: d}

	closedTools := []tool{
		{"wrk", func() (sample, error) { return b.wrkRun(conns, 0) }},
		{"throttlelab load", func() (sample, error) {
			return b.tlRun("--mode", "ramp", "--ramp", fmt.Sprintf("%d:%d", conns, conns), "--step", d.String())
		}},
	}
	onoffTools := []tool{
		{"net/http client", func() (sample, error) { return b.goclientRun(sources, on, off) }},
		{"throttlelab load", func() (sample, error) {
			return b.tlRun("--mode", "onoff", "--sources", strconv.Itoa(sources), "--on", on.String(), "--off", off.String(), "--duration", d.String())
		}},
	}
	openTools := []tool{
		{"wrk", func() (sample, error) { return b.wrkRun(rateConns, rate) }},
		{"throttlelab load", func() (sample, error) {
			return b.tlRun("--mode", "rate", "--rate", strconv.FormatFloat(rate, 'f', -1, 64), "--duration", d.String())
		}},
	}
	if heyErr == nil {
		closedTools = append(closedTools, tool{"hey", func() (sample, error) { return b.heyRun(conns, 0) }})
		openTools = append(openTools, tool{"hey", func() (sample, error) { return b.heyRun(rateConns, rate/float64(rateConns)) }})
	}
	closed := make([][]sample, len(closedTools))
	onoff := make([][]sample, len(onoffTools))
	open := make([][]sample, len(openTools))
	for r := 0; r < rounds; r++ {
		for i, t := range closedTools {
			s, err := t.run()
			if err != nil {
				return err
			}
			closed[i] = append(closed[i], s)
			fmt.Printf("round %d closed loop c=%d  %-16s %9.0f req/s  %5.2f us CPU/req  p50 %6.3f ms  p99 %6.3f ms\n", r+1, conns, t.name, s.rps, s.cpuUs, s.p50, s.p99)
		}
		for i, t := range onoffTools {
			s, err := t.run()
			if err != nil {
				return err
			}
			onoff[i] = append(onoff[i], s)
			fmt.Printf("round %d on/off %d sources  %-16s %9.0f req/s  %5.2f us CPU/req\n", r+1, sources, t.name, s.rps, s.cpuUs)
		}
		for i, t := range openTools {
			s, err := t.run()
			if err != nil {
				return err
			}
			open[i] = append(open[i], s)
			fmt.Printf("round %d fixed rate %g/s  %-16s %9.0f req/s  p50 %6.3f ms  p99 %6.3f ms\n", r+1, rate, t.name, s.rps, s.p50, s.p99)
		}
	}
	med := harness.Median[sample]
	rps := func(s sample) float64 { return s.rps }
	p50 := func(s sample) float64 { return s.p50 }
	p99 := func(s sample) float64 { return s.p99 }
	cpu := func(s sample) float64 { return s.cpuUs }
	// Lower CPU per request is better: its ratios print as b/a so that higher
	// is better throughout.
	invCPU := func(s sample) float64 { return 1 / s.cpuUs }
	fmt.Printf("\n/api on throttlelab serve (GOMAXPROCS=1, CPU 0); load generators on CPU 1, one thread; %s runs, %d rounds, medians\n", d, rounds)
	for i, t := range closedTools {
		fmt.Printf("closed loop c=%-3d %-16s %9.0f req/s  %5.2f us CPU/req  p50 %6.3f ms  p99 %6.3f ms\n", conns, t.name, med(closed[i], rps), med(closed[i], cpu), med(closed[i], p50), med(closed[i], p99))
	}
	for i, t := range onoffTools {
		fmt.Printf("on/off %-3d src   %-16s %9.0f req/s  %5.2f us CPU/req  (on %s, off %s)\n", sources, t.name, med(onoff[i], rps), med(onoff[i], cpu), on, off)
	}
	for i, t := range openTools {
		fmt.Printf("rate %6g/s     %-16s %9.0f req/s  p50 %6.3f ms  p99 %6.3f ms\n", rate, t.name, med(open[i], rps), med(open[i], p50), med(open[i], p99))
	}
	fmt.Println()
	ratios(fmt.Sprintf("closed loop c=%d throughput throttlelab/wrk", conns), closed[1], closed[0], rps, 0.8)
	ratios("  generator CPU per request wrk/throttlelab", closed[1], closed[0], invCPU, 0)
	if heyErr == nil {
		ratios(fmt.Sprintf("closed loop c=%d throughput throttlelab/hey", conns), closed[1], closed[2], rps, 1)
		ratios("  generator CPU per request hey/throttlelab", closed[1], closed[2], invCPU, 0)
	}
	ratios(fmt.Sprintf("on/off %d sources throughput throttlelab/net-http", sources), onoff[1], onoff[0], rps, 1)
	ratios("  generator CPU per request net-http/throttlelab", onoff[1], onoff[0], invCPU, 0)
	lowest := med(open[0], p50)
	if heyErr == nil {
		lowest = min(lowest, med(open[2], p50))
	}
	p50Ratio := med(open[1], p50) / lowest
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	fmt.Printf("p50 at %g/s: throttlelab / lowest of the others = %.3f (goal <= 1.2: %s)\n", rate, p50Ratio, verdict(p50Ratio <= 1.2))
	fromSend := med(open[1], func(s sample) float64 { return s.p50FromSend }) / lowest
	fmt.Printf("  throttlelab counts open-loop latency from each request's due time, its own wake-up lag included;\n  wrk and hey count from the actual send. Counted the same way, throttlelab's p50 is %.3f ms: ratio %.3f (goal <= 1.2: %s)\n",
		med(open[1], func(s sample) float64 { return s.p50FromSend }), fromSend, verdict(fromSend <= 1.2))
	return nil
}
