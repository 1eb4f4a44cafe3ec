package agent

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeNode200 lays out a cgroup v2 node (systemd driver) with n Kubernetes
// containers, each limited to 1 CPU, and returns its root and the
// containers' cpu.stat paths.
func fakeNode200(b *testing.B, n int) (string, []string) {
	root := b.TempDir()
	w := func(p, s string) {
		p = filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	w("proc/self/mountinfo", "25 23 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n")
	w("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n")
	var stats []string
	for i := range n {
		uid := fmt.Sprintf("%08x_2345_4678_9abc_def012345678", i)
		id := strings.Repeat(fmt.Sprintf("%08x", i), 8)
		dir := "sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uid + ".slice/cri-containerd-" + id + ".scope/"
		w(dir+"cgroup.procs", "4001\n")
		w(dir+"cpu.max", "100000 100000\n")
		w(dir+"cpu.max.burst", "0\n")
		w(dir+"cpu.weight", "10\n")
		w(dir+"cpu.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
		w(dir+"cpu.stat", "usage_usec 0\nuser_usec 0\nsystem_usec 0\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n")
		stats = append(stats, filepath.Join(root, dir, "cpu.stat"))
	}
	return root, stats
}

var nodeRounds = 6000

func rssKiB() float64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return f
		}
	}
	return 0
}

// BenchmarkAgentNode200 runs the whole agent (top's watcher reading 200
// containers' cpu.stat, the summaries, the replays) on a fake node of 200
// containers whose counters the benchmark moves by the fleet200 demand
// between rounds, with settings, pressure, processes and discovery read
// every second (interval=1s) and every 10 seconds (interval=10s, the
// agent's default). It reports the agent's CPU per 10 ms round against
// writing the counters (the harness, timed apart), and the process's
// resident memory after a minute of demand at the default window (24 h) and
// chunk (1 min).
func BenchmarkAgentNode200(b *testing.B) {
	for _, every := range []time.Duration{time.Second, 10 * time.Second} {
		b.Run("interval="+every.String(), func(b *testing.B) { benchAgentNode200(b, every) })
	}
}

func benchAgentNode200(b *testing.B, interval time.Duration) {
	rounds := nodeRounds + 1
	root, paths := fakeNode200(b, 200)
	a, err := New(Config{Root: root, Node: "bench", MaxMilli: 4000, Interval: interval})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	// The demand of fleet200, made as it goes (no arrays held: they would
	// count in the resident memory), written in place with pwrite at a
	// fixed width.
	var files []*os.File
	for _, p := range paths {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		files = append(files, f)
	}
	rngs := make([]*rand.Rand, len(files))
	used := make([]time.Duration, len(files))
	for i := range rngs {
		rngs[i] = rand.New(rand.NewPCG(uint64(i+1), 7))
	}
	buf := []byte("usage_usec 000000000000000\nuser_usec 0\nsystem_usec 0\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n")
	write := func(k int) {
		for i, f := range files {
			p := 0.02
			switch i % 4 {
			case 0:
				p = 0.35
			case 1:
				p = 0.15
			}
			if rngs[i].Float64() < p {
				used[i] += time.Duration(1+rngs[i].IntN(3)) * 5 * time.Millisecond
			}
			used[i] += time.Duration(rngs[i].IntN(300)) * time.Microsecond
			s := strconv.FormatInt(int64(used[i]/time.Microsecond), 10)
			copy(buf[11:26], strings.Repeat("0", 15-len(s))+s)
			f.WriteAt(buf, 0)
		}
	}
	var writing, total time.Duration
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for k := range rounds {
			t0 := time.Now()
			write(k)
			t1 := time.Now()
			at := time.Duration(n*rounds+k) * 10 * time.Millisecond
			a.Sample(at)
			if k%int(interval/(10*time.Millisecond)) == 0 {
				if err := a.Report(at); err != nil {
					b.Fatal(err)
				}
			}
			writing += t1.Sub(t0)
			total += time.Since(t0)
		}
		a.Drain()
	}
	b.StopTimer()
	if got := len(a.Views()); got != 200 {
		b.Fatalf("%d containers summarised, want 200", got)
	}
	runtime.GC()
	per := (total - writing) / time.Duration(b.N*rounds)
	b.ReportMetric(float64(per)/float64(10*time.Millisecond)*100, "core%")
	b.ReportMetric(float64(total-writing)/float64(writing), "agent/write")
	b.ReportMetric(rssKiB()/1024, "RSS-MiB")
}

func init() {
	if v := os.Getenv("AGENT_BENCH_ROUNDS"); v != "" {
		nodeRounds, _ = strconv.Atoi(v)
	}
}
