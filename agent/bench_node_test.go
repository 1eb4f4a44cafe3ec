package agent

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/testenv"
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

func rssKiB() float64 { return statusKiB("VmRSS") }

// statusKiB is a field of this process's /proc/self/status, in KiB.
func statusKiB(field string) float64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return f
		}
	}
	return 0
}

// BenchmarkAgentNode200 runs the whole agent (the watcher reading 200
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

// demandWriter moves the containers' counters (the cpu.stat files at
// paths) by the fleet200 demand, one 10 ms round per call: made as it goes
// (no arrays held: they would count in the resident memory), written in
// place with pwrite at a fixed width.
func demandWriter(b *testing.B, paths []string) func() {
	var files []*os.File
	for _, p := range paths {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		files = append(files, f)
	}
	rngs := make([]*rand.Rand, len(files))
	used := make([]time.Duration, len(files))
	for i := range rngs {
		rngs[i] = rand.New(rand.NewPCG(uint64(i+1), 7))
	}
	buf := []byte("usage_usec 000000000000000\nuser_usec 0\nsystem_usec 0\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n")
	return func() {
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
}

func benchAgentNode200(b *testing.B, interval time.Duration) {
	rounds := nodeRounds + 1
	root, paths := fakeNode200(b, 200)
	a, err := New(Config{Root: root, Node: "bench", MaxMilli: 4000, Interval: interval})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	write := demandWriter(b, paths)
	var writing, total time.Duration
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for k := range rounds {
			t0 := time.Now()
			write()
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

// BenchmarkAgentDay200 is the agent's memory at its default window (24 h
// of one-hour blocks) for 200 containers, all in: the real agent on the
// fake node, each container's counters moved by the fleet200 demand for a
// minute (a chunk) in each of 25 hours, agent time jumping an hour less
// that minute between them (a gap, as after a stall: the chunk closes and
// the next starts). So 24 blocks are closed and one is open, each with the
// points its minute throttled, and every ring of 15 s buckets is full size.
// It reports the process's resident memory (the test binary's, harness
// included: an upper bound on the agent's own) and the Go heap in use, and
// fails above the bound of 64 MiB resident. The garbage collector
// runs at the agent command's GCPercent.
func BenchmarkAgentDay200(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(GCPercent))
	gcCPU := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	for range b.N {
		root, paths := fakeNode200(b, 200)
		a, err := New(Config{Root: root, Node: "bench", MaxMilli: 4000, Interval: 10 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		write := demandWriter(b, paths)
		at := time.Duration(0)
		for h := 0; h < 25; h++ {
			for k := 0; k <= 6000; k++ {
				write()
				a.Sample(at)
				if k%1000 == 0 {
					if err := a.Report(at); err != nil {
						b.Fatal(err)
					}
				}
				a.Drain()
				at += 10 * time.Millisecond
			}
			at += time.Hour - time.Minute
		}
		metrics.Read(gcCPU)
		a.Drain()
		if got := len(a.views()); got != 200 {
			b.Fatalf("%d containers summarised, want 200", got)
		}
		// What a scrape of /advice adds: every container's full advice.
		var out discard
		a.serveAdvice(&out, nil)
		if out.n < 200*1000 {
			b.Fatalf("/advice wrote %d bytes for 200 containers", out.n)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		blocks, points := 0, 0
		for _, c := range a.containers {
			for _, bl := range c.sum.Blocks() {
				blocks++
				points += len(bl.Points)
			}
		}
		rss, anon := rssKiB()/1024, statusKiB("RssAnon")/1024
		b.ReportMetric(rss, "RSS-MiB")
		b.ReportMetric(anon, "anon-MiB")
		b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "live-MiB")
		// The collector's CPU over the 25 minutes sampled, the harness's
		// garbage included: an upper bound.
		b.ReportMetric(gcCPU[0].Value.Float64()/(25*60)*100, "gc-core%")
		b.ReportMetric(float64(blocks)/200, "blocks/container")
		b.ReportMetric(float64(points)/float64(max(blocks, 1)), "points/block")
		b.ReportMetric(float64(out.n)/200/1024, "advice-KiB/container") // kept until the next fold
		a.Close()
		b.Logf("%.1f MiB resident (%.1f anonymous, the rest the binary's pages), heap %.1f MiB live (%.1f MiB obtained from the OS), %.1f blocks and %.1f points a block per container",
			rss, anon, float64(ms.HeapAlloc)/(1<<20), float64(ms.Sys)/(1<<20), float64(blocks)/200, float64(points)/float64(max(blocks, 1)))
		if rss >= 64 {
			b.Errorf("%.1f MiB resident for 200 containers over a day: the issue's bound is 64 MiB", rss)
		}
	}
}

// discard is a ResponseWriter that counts what it is given and keeps none.
type discard struct{ n int }

func (d *discard) Header() http.Header         { return http.Header{} }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Write(b []byte) (int, error) { d.n += len(b); return len(b), nil }

func init() {
	if v := os.Getenv("AGENT_BENCH_ROUNDS"); v != "" {
		nodeRounds, _ = strconv.Atoi(v)
	}
}

// BenchmarkAgentStart200 is the agent's start on a node of 200 idle
// containers found at once (fakeNode200: plain files, any host; the
// counters do not move, nor does their gate): three minutes of agent time, a sample every
// 10 ms and a report every 10 s (Sample and Report, as fast as they run;
// each chunk replayed as it closes), by need and, in the same
// run, every container at every sample (HotConfig.Always: the 10 ms
// design). It reports each minute's CPU (getrusage) as a share of that
// minute of agent time (min1-core%, min2-core%, min3-core%; all10ms-...
// for the 10 ms design), the 10 ms design's over by need's for the first
// minute and the third (the steady state), and the containers hot at the
// end of each minute by need, hot or over the cap (ask1, ask2, ask3: the
// first minute holds no advice yet).
func BenchmarkAgentStart200(b *testing.B) {
	const minutes = 3
	var need, all [minutes]time.Duration
	var hot [minutes]int64
	for range b.N {
		for _, always := range []bool{false, true} {
			root, _ := fakeNode200(b, 200)
			// The gate (watch.Watcher's: the containers' lowest common
			// group, whose usage a real node's kernel keeps): the node is
			// idle, so it stands still, as on a real idle node.
			if err := os.WriteFile(filepath.Join(root, "sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/cpu.stat"), []byte("usage_usec 0\nuser_usec 0\nsystem_usec 0\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			a, err := New(Config{Root: root, Node: "bench", MaxMilli: 4000, Hot: HotConfig{Always: always}})
			if err != nil {
				b.Fatal(err)
			}
			for m := range minutes {
				c0 := testenv.ProcessCPU(b)
				for k := range 6000 {
					at := time.Duration(m*6000+k) * 10 * time.Millisecond
					a.Sample(at)
					if len(a.replays) > 0 {
						a.Drain() // as Run's replay worker would, at once
					}
					if k%1000 == 0 {
						if err := a.Report(at); err != nil {
							b.Fatal(err)
						}
					}
				}
				d := testenv.ProcessCPU(b) - c0
				if always {
					all[m] += d
				} else {
					need[m] += d
					hot[m] += a.hot.count.Load() + a.hot.capped.Load()
				}
			}
			if got := len(a.Views()); got != 200 {
				b.Fatalf("%d containers summarised, want 200", got)
			}
			a.Close()
		}
	}
	share := func(d time.Duration) float64 { return float64(d) / float64(time.Duration(b.N)*time.Minute) * 100 }
	for m := range minutes {
		b.ReportMetric(share(need[m]), fmt.Sprintf("min%d-core%%", m+1))
		b.ReportMetric(share(all[m]), fmt.Sprintf("all10ms-min%d-core%%", m+1))
		b.ReportMetric(float64(hot[m])/float64(b.N), fmt.Sprintf("ask%d", m+1))
	}
	b.ReportMetric(float64(all[0])/float64(need[0]), "all10ms/min1")
	b.ReportMetric(float64(all[minutes-1])/float64(need[minutes-1]), "all10ms/min3")
}
