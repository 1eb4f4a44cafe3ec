// Command server benchmarks the cost of throttlelab serve's instrumentation: wrk
// drives /api on throttlelab serve, on a minimal net/http handler
// (bench/server/minimal) and on serve --cpu-clock=false, alternately in one
// session, each server pinned to one CPU with GOMAXPROCS=1 and wrk to the other.
// It reports requests per second, p50/p99 latency, the server's CPU time per
// request and, with valgrind, user-space instructions per request.
//
//	make build && go run ./bench/server [-bin bin/throttlelab] [-rounds 3] [-duration 5s]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/bench/internal/harness"
)

// The servers compared.
const (
	serveName   = "throttlelab serve"
	minimalName = "minimal net/http"
	noClock     = "serve --cpu-clock=f"
)

type subject struct {
	name string
	args []string
}

func index(servers []subject, name string) int {
	for i, s := range servers {
		if s.name == name {
			return i
		}
	}
	return -1
}

type sample struct {
	harness.WrkResult
	cpuUsPerReq float64 // server process CPU (user+system) per request
}

func main() {
	bin := flag.String("bin", "bin/throttlelab", "throttlelab binary (make build)")
	rounds := flag.Int("rounds", 3, "alternating rounds")
	duration := flag.Duration("duration", 5*time.Second, "wrk duration per run")
	conns := flag.Int("connections", 32, "wrk connections")
	instr := flag.Bool("instructions", true, "also count instructions per request under valgrind (if installed)")
	clockOnly := flag.Bool("clock-only", false, "only serve against serve --cpu-clock=false (the cost of the per-request CPU clock), so that more rounds fit")
	flag.Parse()
	if err := run(*bin, *rounds, *duration, *conns, *instr, *clockOnly); err != nil {
		fmt.Fprintln(os.Stderr, "bench/server:", err)
		os.Exit(1)
	}
}

// processCPU returns the CPU time (user + system) process pid has used, from
// /proc/PID/stat. Time stolen by the hypervisor or other tenants is not in it,
// which makes CPU per request steadier than throughput on a shared machine.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may contain spaces: fields count from after its ')'.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const ticksPerSec = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSec, nil
}

func run(bin string, rounds int, d time.Duration, conns int, instr, clockOnly bool) error {
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
	serve := []string{bin, "serve", "--listen", "127.0.0.1:0", "--name", "bench", "--gomaxprocs", "1", "--burn-calibration", "1000000"}
	servers := []subject{
		{serveName, harness.Pin(0, serve...)},
		{minimalName, harness.Pin(0, minimal, "--gomaxprocs", "1")},
		{noClock, harness.Pin(0, append(serve, "--cpu-clock=false")...)},
	}
	if clockOnly {
		servers = []subject{servers[0], servers[2]}
		instr = false
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := make([][]sample, len(servers))
	for r := 0; r < rounds; r++ {
		for i, sv := range servers {
			url, cmd, err := harness.StartServer(ctx, sv.args, "/api")
			if err != nil {
				return err
			}
			cpu0, err := processCPU(cmd.Process.Pid)
			if err != nil {
				harness.Stop(cmd)
				return err
			}
			w, err := harness.Wrk(1, url+"/api", d, conns)
			cpu1, cpuErr := processCPU(cmd.Process.Pid)
			harness.Stop(cmd)
			if err != nil {
				return err
			}
			if cpuErr != nil {
				return cpuErr
			}
			s := sample{WrkResult: w}
			if w.Requests > 0 {
				s.cpuUsPerReq = float64(cpu1-cpu0) / float64(time.Microsecond) / w.Requests
			}
			res[i] = append(res[i], s)
			fmt.Printf("round %d %-21s %9.0f req/s  %6.2f us CPU/req  p50 %6.3f ms  p99 %6.3f ms\n", r+1, sv.name, s.RPS, s.cpuUsPerReq, s.P50Ms, s.P99Ms)
		}
	}
	rps := func(s sample) float64 { return s.RPS }
	p50 := func(s sample) float64 { return s.P50Ms }
	p99 := func(s sample) float64 { return s.P99Ms }
	cpu := func(s sample) float64 { return s.cpuUsPerReq }
	med := harness.Median[sample]
	fmt.Printf("\n/api, wrk -t1 -c%d, %s x %d rounds, servers GOMAXPROCS=1 pinned to CPU 0, wrk to CPU 1\n", conns, d, rounds)
	for i, sv := range servers {
		fmt.Printf("median %-21s %9.0f req/s  %6.2f us CPU/req  p50 %6.3f ms  p99 %6.3f ms\n", sv.name, med(res[i], rps), med(res[i], cpu), med(res[i], p50), med(res[i], p99))
	}
	var ipr []float64
	if _, err := exec.LookPath("valgrind"); instr && err == nil {
		fmt.Println("\ninstructions per request (valgrind callgrind; repeatable whatever else the machine does):")
		for _, sv := range servers {
			n, err := instructionsPerRequest(ctx, sv.args, dir, conns)
			if err != nil {
				return err
			}
			ipr = append(ipr, n)
			fmt.Printf("  %-21s %8.0f instructions/request\n", sv.name, n)
		}
	} else if instr {
		fmt.Println("\n(valgrind is not installed: no instruction counts; apt-get install valgrind)")
	}
	fmt.Println()
	// The per-request CPU clock alone, round by round (the same wrk, a minute
	// apart at most): the default against --cpu-clock=false. Throughput moves
	// with whatever else the machine runs, the server's CPU per request much
	// less, so the verdict is on both.
	if i, off := index(servers, serveName), index(servers, noClock); i >= 0 && off >= 0 {
		var per, perCPU []string
		var cpuRounds []float64
		for r := range res[i] {
			per = append(per, fmt.Sprintf("%.3f", res[i][r].RPS/res[off][r].RPS))
			c := res[i][r].cpuUsPerReq / res[off][r].cpuUsPerReq
			perCPU = append(perCPU, fmt.Sprintf("%.3f", c))
			cpuRounds = append(cpuRounds, c)
		}
		clock := med(res[i], rps) / med(res[off], rps)
		cpuRatio := med(res[i], cpu) / med(res[off], cpu)
		verdict := "within"
		if clock < 0.9 || cpuRatio > 1/0.9 {
			verdict = "NOT within"
		}
		fmt.Printf("per-request CPU clock on /api: %s / %s: throughput %.3f (rounds %v), CPU per request %.3f (rounds %v, their median %.3f): %s the 10%% goal\n",
			servers[i].name, noClock, clock, per, cpuRatio, perCPU, harness.Median(cpuRounds, func(v float64) float64 { return v }), verdict)
	}
	if index(servers, minimalName) < 0 {
		return nil
	}
	for _, i := range []int{0, 2} {
		if ipr != nil {
			fmt.Printf("%s / minimal: instructions per request %.3f (instrumentation costs %.1f%%)\n", servers[i].name, ipr[i]/ipr[1], 100*(ipr[i]/ipr[1]-1))
		}
		ratio := med(res[i], rps) / med(res[1], rps)
		verdict := "within"
		if ratio < 0.9 {
			verdict = "NOT within"
		}
		cpuRatio := med(res[i], cpu) / med(res[1], cpu)
		fmt.Printf("%s / minimal: throughput %.3f (costs %.1f%%, %s the 10%% goal), CPU per request %.3f; p50 ratio %.2f, p99 ratio %.2f\n",
			servers[i].name, ratio, 100*(1-ratio), verdict, cpuRatio, med(res[i], p50)/med(res[1], p50), med(res[i], p99)/med(res[1], p99))
	}
	return nil
}

var summaryRe = regexp.MustCompile(`(?m)^summary: ([0-9]+)`)

// instructionsPerRequest runs the server under callgrind and takes three dumps
// of its instruction count with callgrind_control (each holds the count since the
// one before): after start-up, after an idle interval, and after wrk ran for an
// interval as long. (loaded - idle) / requests is the cost of a request without
// start-up and background work. Unlike time, instruction counts do not depend on
// what else the machine is doing. Dumps are used instead of a clean exit because
// callgrind trips over a Go program's signal handling on SIGTERM, and Go's
// asynchronous preemption (also signals) is turned off for every server alike.
func instructionsPerRequest(ctx context.Context, args []string, dir string, conns int) (float64, error) {
	// valgrind runs the program about 50 times slower: a short interval is plenty.
	const d = 4 * time.Second
	vg := append([]string{"valgrind", "--tool=callgrind", "--callgrind-out-file=" + filepath.Join(dir, "cg.%p")}, harness.Unpin(args)...)
	vg = harness.Pin(0, vg...)
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, vg[0], vg[1:]...)
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "GODEBUG=asyncpreemptoff=1")
	url, err := harness.Start(cmd, "/api")
	if err != nil {
		return 0, err
	}
	defer harness.Stop(cmd)
	pid := cmd.Process.Pid
	dump := func(n int) (float64, error) {
		if out, err := exec.Command("callgrind_control", "-d", strconv.Itoa(pid)).CombinedOutput(); err != nil {
			return 0, fmt.Errorf("callgrind_control -d: %v\n%s", err, out)
		}
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("cg.%d.%d", pid, n)))
		if err != nil {
			return 0, fmt.Errorf("reading callgrind dump %d: %v\n%s", n, err, stderr.String())
		}
		m := summaryRe.FindSubmatch(b)
		if m == nil {
			return 0, fmt.Errorf("callgrind dump %d has no summary", n)
		}
		return strconv.ParseFloat(string(m[1]), 64)
	}
	if _, err := dump(1); err != nil { // start-up
		return 0, err
	}
	time.Sleep(d)
	idle, err := dump(2)
	if err != nil {
		return 0, err
	}
	w, err := harness.Wrk(1, url+"/api", d, conns)
	if err != nil {
		return 0, err
	}
	loaded, err := dump(3)
	if err != nil {
		return 0, err
	}
	if w.Requests == 0 {
		return 0, fmt.Errorf("wrk made no requests under valgrind")
	}
	return (loaded - idle) / w.Requests, nil
}
