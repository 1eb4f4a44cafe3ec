// Command server benchmarks the cost of throttlelab serve's instrumentation: wrk
// drives /api on throttlelab serve and on a minimal net/http handler
// (bench/server/minimal), alternately in one session, each server pinned to one
// CPU with GOMAXPROCS=1 and wrk to the other. It reports requests per second and
// p50/p99 latency, and the throughput ratio.
//
//	make build && go run ./bench/server [-bin bin/throttlelab] [-rounds 3] [-duration 5s]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

type sample struct {
	rps, p50ms, p99ms float64
}

func main() {
	bin := flag.String("bin", "bin/throttlelab", "throttlelab binary (make build)")
	rounds := flag.Int("rounds", 3, "alternating rounds")
	duration := flag.Duration("duration", 5*time.Second, "wrk duration per run")
	conns := flag.Int("connections", 32, "wrk connections")
	flag.Parse()
	if err := run(*bin, *rounds, *duration, *conns); err != nil {
		fmt.Fprintln(os.Stderr, "bench/server:", err)
		os.Exit(1)
	}
}

// pin prefixes a command with taskset when there are at least two CPUs.
func pin(cpu int, args ...string) []string {
	if _, err := exec.LookPath("taskset"); err == nil && runtime.NumCPU() >= 2 {
		return append([]string{"taskset", "-c", strconv.Itoa(cpu)}, args...)
	}
	return args
}

// startServer starts a server command and returns its base URL from its
// "listening on URL" line.
func startServer(ctx context.Context, args []string) (string, *exec.Cmd, error) {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("starting %v: %w", args, err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		return "", nil, fmt.Errorf("%v printed no address: %w", args, err)
	}
	f := strings.Fields(line)
	if len(f) < 3 || f[0] != "listening" {
		cmd.Process.Kill()
		return "", nil, fmt.Errorf("%v: unexpected first line %q", args, line)
	}
	go io.Copy(io.Discard, out)
	resp, err := http.Get(f[2] + "/api")
	if err != nil {
		cmd.Process.Kill()
		return "", nil, err
	}
	resp.Body.Close()
	return f[2], cmd, nil
}

var (
	reqsRe = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	pctRe  = regexp.MustCompile(`(?m)^\s+(50|99)\.000%\s+([0-9.]+)(us|ms|s)`)
)

func wrk(url string, d time.Duration, conns int) (sample, error) {
	args := pin(1, "wrk", "-t1", "-c"+strconv.Itoa(conns), "-d"+d.String(), "--latency", url+"/api")
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return sample{}, fmt.Errorf("wrk: %v\n%s", err, out)
	}
	var s sample
	m := reqsRe.FindSubmatch(out)
	if m == nil {
		return s, fmt.Errorf("no Requests/sec in wrk output:\n%s", out)
	}
	s.rps, _ = strconv.ParseFloat(string(m[1]), 64)
	for _, p := range pctRe.FindAllSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(string(p[2]), 64)
		switch string(p[3]) {
		case "us":
			v /= 1000
		case "s":
			v *= 1000
		}
		if string(p[1]) == "50" {
			s.p50ms = v
		} else {
			s.p99ms = v
		}
	}
	return s, nil
}

func run(bin string, rounds int, d time.Duration, conns int) error {
	if _, err := exec.LookPath("wrk"); err != nil {
		return fmt.Errorf("wrk is not installed: apt-get install wrk")
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s: %v: run make build first", bin, err)
	}
	dir, err := os.MkdirTemp("", "bench-server")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	minimal := filepath.Join(dir, "minimal")
	_, self, _, _ := runtime.Caller(0)
	build := exec.Command("go", "build", "-o", minimal, "./minimal")
	build.Dir = filepath.Dir(self)
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building the minimal server: %v\n%s", err, out)
	}
	servers := []struct {
		name string
		args []string
	}{
		{"throttlelab serve", pin(0, bin, "serve", "--listen", "127.0.0.1:0", "--name", "bench", "--gomaxprocs", "1", "--burn-calibration", "1000000")},
		{"minimal net/http", pin(0, minimal, "--gomaxprocs", "1")},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := make([][]sample, len(servers))
	for r := 0; r < rounds; r++ {
		for i, sv := range servers {
			url, cmd, err := startServer(ctx, sv.args)
			if err != nil {
				return err
			}
			s, err := wrk(url, d, conns)
			cmd.Process.Kill()
			cmd.Wait()
			if err != nil {
				return err
			}
			res[i] = append(res[i], s)
			fmt.Printf("round %d %-18s %9.0f req/s  p50 %6.3f ms  p99 %6.3f ms\n", r+1, sv.name, s.rps, s.p50ms, s.p99ms)
		}
	}
	med := func(v []sample, f func(sample) float64) float64 {
		x := make([]float64, len(v))
		for i := range v {
			x[i] = f(v[i])
		}
		slices.Sort(x)
		return x[len(x)/2]
	}
	rps := func(s sample) float64 { return s.rps }
	p50 := func(s sample) float64 { return s.p50ms }
	p99 := func(s sample) float64 { return s.p99ms }
	fmt.Printf("\n/api, wrk -t1 -c%d, %s x %d rounds, servers GOMAXPROCS=1 pinned to CPU 0, wrk to CPU 1\n", conns, d, rounds)
	for i, sv := range servers {
		fmt.Printf("median %-18s %9.0f req/s  p50 %6.3f ms  p99 %6.3f ms\n", sv.name, med(res[i], rps), med(res[i], p50), med(res[i], p99))
	}
	ratio := med(res[0], rps) / med(res[1], rps)
	verdict := "within"
	if ratio < 0.9 {
		verdict = "NOT within"
	}
	fmt.Printf("throughput throttlelab/minimal = %.3f: instrumentation costs %.1f%% (%s the 10%% goal); p50 ratio %.2f, p99 ratio %.2f\n",
		ratio, 100*(1-ratio), verdict, med(res[0], p50)/med(res[1], p50), med(res[0], p99)/med(res[1], p99))
	return nil
}
