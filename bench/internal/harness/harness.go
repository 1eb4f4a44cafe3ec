// Package harness holds what the side-by-side benchmarks share: pinning
// processes to CPUs, starting servers and reading their address, running wrk,
// and medians.
package harness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Pin prefixes a command with taskset when there are at least two CPUs.
func Pin(cpu int, args ...string) []string {
	if _, err := exec.LookPath("taskset"); err == nil && runtime.NumCPU() >= 2 {
		return append([]string{"taskset", "-c", strconv.Itoa(cpu)}, args...)
	}
	return args
}

// Unpin removes a taskset prefix added by Pin.
func Unpin(args []string) []string {
	if len(args) > 3 && args[0] == "taskset" {
		return args[3:]
	}
	return args
}

// Start starts cmd, reads its first stdout line, which must be
// "listening on URL ...", and makes one request to URL+probe to check it is up.
func Start(cmd *exec.Cmd, probe string) (string, error) {
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("starting %v: %w", cmd.Args, err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		return "", fmt.Errorf("%v printed no address: %w", cmd.Args, err)
	}
	f := strings.Fields(line)
	if len(f) < 3 || f[0] != "listening" {
		cmd.Process.Kill()
		return "", fmt.Errorf("%v: unexpected first line %q", cmd.Args, line)
	}
	go io.Copy(io.Discard, out)
	resp, err := http.Get(f[2] + probe)
	if err != nil {
		cmd.Process.Kill()
		return "", err
	}
	resp.Body.Close()
	return f[2], nil
}

// StartServer runs args as a server with its stderr discarded.
func StartServer(ctx context.Context, args []string, probe string) (string, *exec.Cmd, error) {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stderr = io.Discard
	url, err := Start(cmd, probe)
	return url, cmd, err
}

// Stop kills a server and waits for it.
func Stop(cmd *exec.Cmd) {
	cmd.Process.Kill()
	cmd.Wait()
}

// WrkResult is what wrk reports.
type WrkResult struct {
	RPS, P50Ms, P99Ms float64
	Requests          float64
}

var (
	reqsRe  = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	totalRe = regexp.MustCompile(`([0-9]+) requests in`)
	// wrk prints "50%" (wrk2 prints "50.000%").
	pctRe = regexp.MustCompile(`(?m)^\s+(50|99)(?:\.000)?%\s+([0-9.]+)(us|ms|s)\s*$`)
)

// Wrk runs wrk (pinned to cpu) and parses its report. extra goes before the URL
// (a -s script, say).
func Wrk(cpu int, url string, d time.Duration, conns int, extra ...string) (WrkResult, error) {
	return WrkState(cpu, url, d, conns, nil, extra...)
}

// WrkState is Wrk that also returns wrk's process state (for its CPU time).
func WrkState(cpu int, url string, d time.Duration, conns int, state **os.ProcessState, extra ...string) (WrkResult, error) {
	args := Pin(cpu, append(append([]string{"wrk", "-t1", "-c" + strconv.Itoa(conns), "-d" + d.String(), "--latency"}, extra...), url)...)
	cmd := exec.Command(args[0], args[1:]...)
	out, err := cmd.CombinedOutput()
	if state != nil {
		*state = cmd.ProcessState
	}
	if err != nil {
		return WrkResult{}, fmt.Errorf("wrk: %v\n%s", err, out)
	}
	var r WrkResult
	m := reqsRe.FindSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("no Requests/sec in wrk output:\n%s", out)
	}
	r.RPS, _ = strconv.ParseFloat(string(m[1]), 64)
	if m := totalRe.FindSubmatch(out); m != nil {
		r.Requests, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	for _, p := range pctRe.FindAllSubmatch(out, -1) {
		v := ToMs(string(p[2]), string(p[3]))
		if string(p[1]) == "50" {
			r.P50Ms = v
		} else {
			r.P99Ms = v
		}
	}
	return r, nil
}

// ToMs converts a number with a unit (us, ms, s, secs) to milliseconds.
func ToMs(v, unit string) float64 {
	f, _ := strconv.ParseFloat(v, 64)
	switch unit {
	case "us":
		return f / 1000
	case "s", "secs":
		return f * 1000
	}
	return f
}

// Median returns the median of the values f picks from vs.
func Median[T any](vs []T, f func(T) float64) float64 {
	x := make([]float64, len(vs))
	for i := range vs {
		x[i] = f(vs[i])
	}
	slices.Sort(x)
	if len(x) == 0 {
		return 0
	}
	return x[len(x)/2]
}
