package agent

// A real-kernel benchmark: it makes 200 cgroups on this host, so run it
// under the host lock (flock /tmp/throttlelab-host.lock go test ./agent
// -run X -bench AgentRealIdlePaired -benchtime 3x).

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/watch"
)

// pairedEnv makes the test binary one agent of BenchmarkAgentRealIdlePaired
// (runPairedAgent): "byneed", "byneed-each" (Config.takeIdle) or "always"
// (HotConfig.Always, the 10 ms design).
const pairedEnv = "THROTTLELAB_TEST_AGENT"

// BenchmarkAgentRealIdlePaired runs four agents at once, each a process of
// its own, on the 200 idle pods of BenchmarkAgentRealNode200 for 150 s
// from their start: one sampling by need, as a node runs it, and one
// reading every container every 10 ms (HotConfig.Always: the 10 ms
// design). Each process's own CPU time (getrusage, from its start, before
// the agent's New) is taken at the same instants (60 s, 90 s, 150 s after
// all were started), so that the figures cover the same
// window on a shared host whose load moves: min1-core% is the by-need
// agent's first minute (every container found at once, none with advice
// yet), steady-core% its last 60 s (every container with advice: the
// steady state), as shares of one core; all10ms-min1-core% and
// all10ms-steady-core% the 10 ms design's, and all10ms/min1 and
// all10ms/steady the ratios (what by need saves, load or no load);
// procs1-min1-core% and procs1-steady-core% a third agent's, by need with
// GOMAXPROCS=1 (the DaemonSet sets 2; the others run with 2), and
// each-min1-core% and each-steady-core% a fourth's, by need taking every
// idle sample at once (Config.takeIdle: as before observe held them). hot is
// the by-need agent's hot containers at the end (0 is what idle
// containers should give). Each run is logged with the load average at
// its start and end.
func BenchmarkAgentRealIdlePaired(b *testing.B) {
	realNode200(b)
	marks := []time.Duration{time.Minute, 90 * time.Second, 150 * time.Second}
	var min1, steady, min1All, steadyAll, min1One, steadyOne, min1Each, steadyEach time.Duration
	hot := 0
	for run := range b.N {
		load0 := loadAvg(b)
		// by need at the DaemonSet's GOMAXPROCS, the 10 ms design, and by need
		// with one P (what the chart's setting costs)
		agents := []*pairedAgent{startPaired(b, "byneed", 2), startPaired(b, "always", 2), startPaired(b, "byneed", 1), startPaired(b, "byneed-each", 2)}
		cpu := make([][]time.Duration, len(agents))
		start := time.Now()
		for _, m := range marks {
			time.Sleep(time.Until(start.Add(m)))
			for i, p := range agents {
				cpu[i] = append(cpu[i], p.mark(b))
			}
		}
		h, _ := agents[0].stop(b)
		agents[1].stop(b)
		agents[2].stop(b)
		agents[3].stop(b)
		hot += h
		pct := func(d time.Duration) float64 { return float64(d) / float64(time.Minute) * 100 }
		m1, st := cpu[0][0], cpu[0][2]-cpu[0][1]
		m1All, stAll := cpu[1][0], cpu[1][2]-cpu[1][1]
		m1One, stOne := cpu[2][0], cpu[2][2]-cpu[2][1]
		m1Each, stEach := cpu[3][0], cpu[3][2]-cpu[3][1]
		b.Logf("run %d: by need first minute %.3f%%, steady %.3f%%; 10 ms design %.3f%%, %.3f%% (%.1fx, %.1fx); by need with GOMAXPROCS=1 %.3f%%, %.3f%%; by need taking idle samples at once %.3f%%, %.3f%%; hot at the end %d; load average %s -> %s",
			run+1, pct(m1), pct(st), pct(m1All), pct(stAll), float64(m1All)/float64(m1), float64(stAll)/float64(st), pct(m1One), pct(stOne), pct(m1Each), pct(stEach), h, load0, loadAvg(b))
		min1, steady, min1All, steadyAll = min1+m1, steady+st, min1All+m1All, steadyAll+stAll
		min1One, steadyOne = min1One+m1One, steadyOne+stOne
		min1Each, steadyEach = min1Each+m1Each, steadyEach+stEach
	}
	share := func(d time.Duration) float64 { return float64(d) / float64(time.Duration(b.N)*time.Minute) * 100 }
	b.ReportMetric(share(min1), "min1-core%")
	b.ReportMetric(share(steady), "steady-core%")
	b.ReportMetric(share(min1All), "all10ms-min1-core%")
	b.ReportMetric(share(steadyAll), "all10ms-steady-core%")
	b.ReportMetric(float64(min1All)/float64(min1), "all10ms/min1")
	b.ReportMetric(float64(steadyAll)/float64(steady), "all10ms/steady")
	b.ReportMetric(share(min1One), "procs1-min1-core%")
	b.ReportMetric(share(steadyOne), "procs1-steady-core%")
	b.ReportMetric(share(min1Each), "each-min1-core%")
	b.ReportMetric(share(steadyEach), "each-steady-core%")
	b.ReportMetric(float64(hot)/float64(b.N), "hot")
}

// loadAvg is /proc/loadavg's three averages.
func loadAvg(b *testing.B) string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		b.Fatal(err)
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}

// pairedAgent is one agent process of BenchmarkAgentRealIdlePaired.
type pairedAgent struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startPaired starts the test binary as an agent (runPairedAgent) with
// GOMAXPROCS procs.
func startPaired(b *testing.B, mode string, procs int) *pairedAgent {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), pairedEnv+"="+mode, "GOMAXPROCS="+strconv.Itoa(procs))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); cmd.Wait() }) // before the groups' removal (registered after them)
	return &pairedAgent{cmd: cmd, in: in, out: bufio.NewReader(out)}
}

// mark asks the agent process for its CPU time so far.
func (p *pairedAgent) mark(b *testing.B) time.Duration {
	if _, err := io.WriteString(p.in, "mark\n"); err != nil {
		b.Fatal(err)
	}
	line, err := p.out.ReadString('\n')
	if err != nil {
		b.Fatalf("agent process: %q %v", line, err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		b.Fatalf("agent process: %q: %v", line, err)
	}
	return time.Duration(ns)
}

// stop ends the agent process and returns its hot and summarised
// containers at the end; it fails unless it summarised 200.
func (p *pairedAgent) stop(b *testing.B) (hot, views int) {
	p.in.Close()
	line, _ := p.out.ReadString('\n')
	if err := p.cmd.Wait(); err != nil {
		b.Fatalf("agent process: %v", err)
	}
	if _, err := fmt.Sscanf(line, "hot %d views %d", &hot, &views); err != nil {
		b.Fatalf("agent process ended with %q: %v", line, err)
	}
	if views != 200 {
		b.Fatalf("agent process summarised %d containers, want 200", views)
	}
	return hot, views
}

// runPairedAgent is the agent process of BenchmarkAgentRealIdlePaired: it
// runs an agent on this host's containers that realNode200 makes (by need,
// or every container every 10 ms with mode "always") from its start, and
// answers each line on its standard input with its CPU time since it
// began (ns, getrusage); at the input's end it stops and prints its hot
// and summarised containers.
func runPairedAgent(mode string) error {
	cpu0, err := selfCPU()
	if err != nil {
		return err
	}
	selected := func(id watch.Identity) bool {
		return id.Kind == watch.KindContainer && strings.HasPrefix(id.ContainerID, "c")
	}
	a, err := New(Config{Root: "/", Node: "bench", MaxMilli: 2000, Select: selected, Hot: HotConfig{Always: mode == "always"}, takeIdle: mode == "byneed-each"})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cpu, err := selfCPU()
		if err != nil {
			cancel()
			return err
		}
		fmt.Println(int64(cpu - cpu0))
	}
	hot := a.hot.count.Load()
	cancel()
	if err := <-done; err != nil {
		return err
	}
	fmt.Printf("hot %d views %d\n", hot, len(a.Views()))
	return nil
}

// selfCPU is this process's CPU time so far (getrusage).
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
