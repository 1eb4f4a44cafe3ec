package main

// End-to-end tests: they build the binary and drive it as a user would.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/server"
	"github.com/throttlelab/throttlelab/workload"
)

var binary string

func TestMain(m *testing.M) {
	// In the VM matrix there is no go tool: the harness gives a built binary.
	if binary = os.Getenv("THROTTLELAB_BINARY"); binary != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "throttlelab-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "throttlelab")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building throttlelab: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// exitCode returns the exit status a finished command's Wait reported (0 for nil).
func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func run(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

// serveProc is a running `throttlelab serve`.
type serveProc struct {
	cmd  *exec.Cmd
	base string
	done chan error
}

// startServe starts `throttlelab serve` with args (through sh -c prefix if given)
// and waits for its "listening on" line.
func startServe(t *testing.T, shellPrefix string, args ...string) *serveProc {
	t.Helper()
	all := append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)
	var cmd *exec.Cmd
	if shellPrefix == "" {
		cmd = exec.Command(binary, all...)
	} else {
		quoted := make([]string, len(all))
		for i, a := range all {
			quoted[i] = "'" + a + "'"
		}
		cmd = exec.Command("sh", "-c", shellPrefix+" exec '"+binary+"' "+strings.Join(quoted, " "))
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &serveProc{cmd: cmd, done: make(chan error, 1)}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("serve printed no address: %v", err)
	}
	f := strings.Fields(line)
	if len(f) < 3 || f[0] != "listening" || !strings.HasPrefix(f[2], "http://127.0.0.1:") {
		cmd.Process.Kill()
		t.Fatalf("serve's first line = %q", line)
	}
	s.base = f[2]
	go func() { io.Copy(io.Discard, out); s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-s.done
	})
	return s
}

func httpGet(url string) (*http.Response, []byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func TestServeEndToEnd(t *testing.T) {
	s := startServe(t, "", "--name", "e2e", "--gomaxprocs", "2")
	for _, path := range []string{"/healthz", "/api", "/tile?x=0&y=0", "/burn?cpu=2ms", "/metrics"} {
		resp, _, err := httpGet(s.base + path)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %v %v", path, resp, err)
		}
		if resp.Header.Get("X-Instance") != "e2e" {
			t.Errorf("GET %s: X-Instance %q", path, resp.Header.Get("X-Instance"))
		}
	}
	_, body, err := httpGet(s.base + "/info")
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		GOMAXPROCS        int    `json:"gomaxprocs"`
		RuntimeGOMAXPROCS int    `json:"runtime_gomaxprocs"`
		Source            string `json:"gomaxprocs_source"`
		Limits            *cgroup.CPULimits
	}
	if err := json.Unmarshal(body, &info); err != nil {
		t.Fatal(err)
	}
	if info.GOMAXPROCS != 2 || info.RuntimeGOMAXPROCS != 2 || info.Source != "fixed" {
		t.Errorf("/info: %s", body)
	}

	// SIGTERM with a request in flight: it completes, new ones are refused, and
	// the server exits 0.
	type res struct {
		code int
		err  error
	}
	inflight := make(chan res, 1)
	go func() {
		resp, _, err := httpGet(s.base + "/burn?cpu=300ms")
		if err != nil {
			inflight <- res{0, err}
			return
		}
		inflight <- res{resp.StatusCode, nil}
	}()
	waitFor(t, func() bool { return metricValue(s.base, "throttlelab_requests_in_flight") == 1 })
	s.cmd.Process.Signal(syscall.SIGTERM)
	r := <-inflight
	if r.err != nil || r.code != 200 {
		t.Errorf("in-flight request across SIGTERM: %d %v", r.code, r.err)
	}
	if err := <-s.done; err != nil {
		t.Errorf("serve after SIGTERM: %v, want exit 0", err)
	}
	s.done <- nil // for the cleanup
	if _, _, err := httpGet(s.base + "/api"); err == nil {
		t.Error("server still answers after SIGTERM")
	}
}

// metricValue reads one unlabelled-instance metric from /metrics, -1 if absent.
func metricValue(base, name string) float64 {
	_, b, err := httpGet(base + "/metrics")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, name+"{") || strings.HasPrefix(l, name+" ") {
			f := strings.Fields(l)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			return v
		}
	}
	return -1
}

// waitFor polls cond until it holds; the deadline is a safety net, not timing.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestServeThrottledInRealCgroup runs the server in a real cgroup limited to 0.2
// CPU (placed there by the shell before exec, so it never runs unconfined) and
// checks the shapes: /info sees the limit, GOMAXPROCS=limit gives 1, requests
// stall (wall well above CPU) and the kernel counts throttled periods.
func TestServeThrottledInRealCgroup(t *testing.T) {
	g := cgrouptest.LimitedGroup(t, 20000, 100000)
	s := startServe(t, g.ShellPrefix(), "--name", "limited", "--gomaxprocs", "limit", "--burn-calibration", "1000000")
	_, body, err := httpGet(s.base + "/info")
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		GOMAXPROCS int `json:"gomaxprocs"`
		Limits     cgroup.CPULimits
	}
	json.Unmarshal(body, &info)
	if info.GOMAXPROCS != 1 || info.Limits.LimitCores != 0.2 || info.Limits.Group != g.Dir {
		t.Errorf("/info in a 0.2-CPU group: %s", body)
	}
	for i := 0; i < 3; i++ {
		resp, _, err := httpGet(s.base + "/burn?cpu=50ms")
		if err != nil {
			t.Fatal(err)
		}
		tm, err := server.ParseTiming(resp.Header.Get("Server-Timing"))
		if err != nil {
			t.Fatal(err)
		}
		// 50 ms of CPU at 20 ms per 100 ms period cannot finish in one period.
		if tm.CPU <= 0 || tm.Wall < 2*tm.CPU {
			t.Errorf("burn in a 0.2-CPU group: %+v, want wall >= 2 x cpu", tm)
		}
	}
	if n := g.Stat(t)["nr_throttled"]; n <= 0 {
		t.Errorf("cpu.stat nr_throttled = %d after 150 ms of CPU at 0.2 CPU, want > 0", n)
	}
}

func TestBadInputExitsTwo(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--gomaxprocs", "lots"}, "--gomaxprocs"},
		{[]string{"serve", "--listen", "nonsense"}, "--listen"},
		{[]string{"serve", "--max-inflight", "0"}, "--max-inflight"},
		{[]string{"serve", "--max-cpu", "-1s"}, "--max-cpu"},
		{[]string{"serve", "--single=maybe"}, "single"},
		{[]string{"serve", "extra"}, "arg"},
		{[]string{"burst", "--workers", "0"}, "--workers"},
		{[]string{"burst", "--busy", "soon"}, "busy"},
		{[]string{"noise", "--threads", "-1"}, "--threads"},
		{[]string{"tiles", "verify", "--sample", "-1"}, "--sample"},
		{[]string{"tiles", "verify", "--tile", "170,0"}, "--tile"},
		{[]string{"tiles", "verify", "--catalog", "/nonexistent"}, "--catalog"},
		{[]string{"tiles", "stats", "--ns-per-iteration", "-1"}, "--ns-per-iteration"},
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"serve", "--frob"}, "unknown flag"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := run(t, tt.args...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != 2 || len(lines) != 1 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q: want exit 2 and one line naming %q", r.code, r.stderr, tt.want)
			}
		})
	}
}

func TestBurstAndNoise(t *testing.T) {
	r := run(t, "burst", "--workers", "2", "--busy", "20ms", "--sleep", "5ms", "--cycles", "2", "--gomaxprocs", "2")
	if r.code != 0 {
		t.Fatalf("burst: exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("burst printed %d lines, want 2:\n%s", len(lines), r.stdout)
	}
	for _, l := range lines {
		var c workload.BurstCycle
		if err := json.Unmarshal([]byte(l), &c); err != nil || len(c.Iterations) != 2 || c.Total == 0 {
			t.Errorf("burst line %q: %+v %v", l, c, err)
		}
	}
	if r := run(t, "noise", "--threads", "1", "--duration", "50ms"); r.code != 0 {
		t.Errorf("noise: exit %d: %s", r.code, r.stderr)
	}
}

func TestTilesVerifyAndStats(t *testing.T) {
	r := run(t, "tiles", "verify", "--sample", "3", "--seed", "7", "--tile", "85,70")
	if r.code != 0 || !strings.Contains(r.stdout, "ok: 4 tiles") {
		t.Fatalf("tiles verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A catalogue that is self-consistent but wrong about one tile must fail.
	c, err := workload.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	c.Tiles[workload.Tile{X: 85, Y: 70}.Index()].Hash[0] ^= 0xff
	bad := filepath.Join(t.TempDir(), "bad.csv.gz")
	f, _ := os.Create(bad)
	if err := workload.WriteCatalog(f, c); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r = run(t, "tiles", "verify", "--catalog", bad, "--sample", "0", "--tile", "85,70", "--tile", "0,0")
	if r.code != 1 || !strings.Contains(r.stdout, "MISMATCH tile 85,70") || strings.Contains(r.stdout, "tile 0,0") ||
		!strings.Contains(r.stderr, "1 of 2 tiles differ") {
		t.Errorf("verify against a wrong catalogue: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, "tiles", "stats", "--ns-per-iteration", "2.8")
	for _, want := range []string{"26010 tiles", "2.800 ns/iteration", "small", "medium", "large", "p50", "cost histogram"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("tiles stats lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestVersion(t *testing.T) {
	if r := run(t, "--version"); r.code != 0 || !strings.Contains(r.stdout, "throttlelab version") {
		t.Errorf("--version: %d %q", r.code, r.stdout)
	}
}
