package agent

// A real-kernel benchmark: it makes 200 cgroups on this host, so run it
// under the host lock (flock /tmp/throttlelab-host.lock go test ./agent
// -run X -bench RealNode200).

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/testenv"
	"github.com/throttlelab/throttlelab/watch"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// BenchmarkAgentRealNode200 runs the whole agent on a real node's cgroups:
// 200 Kubernetes pods made on this host (cgroupfs driver, under a test
// group), each a pod group with a sandbox and a container limited to 1 CPU
// (602 groups, with their cpuacct twins where cpuacct is a hierarchy of its
// own). In the same run it runs the agent as it was before it read only its
// containers every 10 ms (every group at every sample: all), and the agent
// on a copy of the same hierarchies in plain files (the same groups, files
// and contents, served by the page cache instead of the kernel's cgroup
// code: files). The groups are idle (their counters do not move). It
// reports the agent's CPU per 10 ms round (core%, of one core, as
// BenchmarkAgentNode200) for each, and the ratios.
func BenchmarkAgentRealNode200(b *testing.B) {
	selected, _ := realNode200(b)
	fake := b.TempDir()
	if err := copyHierarchies(fake); err != nil {
		b.Fatal(err)
	}
	var real, all, copied time.Duration
	for range b.N {
		real += agentRounds(b, "/", selected, false)
		all += agentRounds(b, "/", selected, true)
		copied += agentRounds(b, fake, selected, false)
	}
	per := func(d time.Duration) float64 {
		return float64(d) / float64(b.N*realRounds) / float64(10*time.Millisecond) * 100
	}
	b.ReportMetric(per(real), "real-core%")
	b.ReportMetric(per(all), "all-core%")
	b.ReportMetric(per(copied), "files-core%")
	b.ReportMetric(float64(all)/float64(real), "all/real")
	b.ReportMetric(float64(real)/float64(copied), "real/files")
}

// realNode200 makes the groups of a node of 200 pods on this host (see
// BenchmarkAgentRealNode200), removed when the benchmark ends, and returns
// the agent's selection of their containers and each container's
// directories (one per hierarchy that has it).
func realNode200(b *testing.B) (func(watch.Identity) bool, [][]string) {
	base := cgrouptest.LimitedGroup(b, 100000, 100000)
	base.SetQuota(b, -1) // the containers' quotas may not exceed their parent's
	dirs := watchtest.WithUsage(b, base)
	mkdir := func(rel string) {
		for _, d := range dirs {
			p := filepath.Join(d, rel)
			if err := os.Mkdir(p, 0o755); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { os.Remove(p) })
		}
	}
	mkdir("kubepods")
	mkdir("kubepods/burstable")
	var containers [][]string
	for i := range 200 {
		pod := fmt.Sprintf("kubepods/burstable/pod%08x-2345-4678-9abc-def012345678", i)
		mkdir(pod)
		mkdir(pod + "/" + strings.Repeat(fmt.Sprintf("5%07x", i), 8)) // the sandbox
		ctr := pod + "/" + strings.Repeat(fmt.Sprintf("c%07x", i), 8)
		mkdir(ctr)
		var in []string
		for _, d := range dirs {
			in = append(in, filepath.Join(d, ctr))
		}
		containers = append(containers, in)
		if err := os.WriteFile(filepath.Join(base.Dir, ctr, quotaFile(base.Version)), []byte(quotaLine(base.Version)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return func(id watch.Identity) bool {
		return id.Kind == watch.KindContainer && strings.HasPrefix(id.ContainerID, "c")
	}, containers
}

// BenchmarkAgentRealRun runs the agent as a node runs it (Run: sampling by
// need, reports every 10 s, each container's minute replayed when the
// minute ends) on the groups of BenchmarkAgentRealNode200 for two minutes
// and a half of wall time (two chunks closed), start-up included, and takes
// the CPU the process used (getrusage); in the same run, the agent reading
// every container every 10 ms (HotConfig.Always: the 10 ms design) for as
// long, and a bare 10 ms ticker that does nothing else, for 15 s.
// run-core%, all10ms-core% and ticker-core% are their shares of one core
// over the whole run; steady-core% and all10ms-steady-core% over its last
// 60 s, after every container has advice; min1-core% and min2-core% the
// by-need run's first minute (no container has advice yet: until
// 2026-11-28 every one asked to be hot, the cap holding 32) and its
// second, all10ms-min1-core% the 10 ms design's first minute, and ask1 the
// containers hot or asking to be at the end of the first minute; hot the
// containers hot at the end. What waking every 10 ms costs on this host is
// the floor under a sampler that does.
func BenchmarkAgentRealRun(b *testing.B) {
	selected, _ := realNode200(b)
	runAgentAgainstTicker(b, selected)
}

// BenchmarkAgentRealRunBusy is BenchmarkAgentRealRun with 20 of the 200
// containers busy and the others lightly so: a helper process (this test
// binary, THROTTLELAB_TEST_LOAD) puts one thread in each container's groups
// (v1 moves threads; a v2 host would need threaded groups, so it skips
// there), which runs for 10 ms every 200 ms in 20 of them (their periods
// reach their lowest pick, and HotConfig.MinCores' 5 ms: hot; until
// 2026-11-27 5 ms every 100 ms, the same load, whose periods fall at or
// under MinCores, cold now) and for 50 us every second in the others
// (cold: their periods stay under MinCores, and under the margin of their
// lowest pick, the ladder's lowest, 10m, a threshold of 0.75 ms a
// period). Only the agent's process is timed; the helper's
// 200 threads load the machine as well (load-core%: the helper's CPU over
// the run, from /proc). hot counts the containers hot at the end (20 is
// what the benchmark means to measure), light-hot those of them that are
// light; the log says why each went hot (need.why). The light load was 0.2
// ms every 100 ms until 2026-11-27: its own sums (0.2-0.4 ms a period) stay
// under the threshold (TestLightDemandStaysCold), but the kernel charges
// interrupt time to the task it interrupts (no IRQ_TIME_ACCOUNTING on the
// reference machine), and a light thread on a CPU when one ran long was
// charged 0.76-3.45 ms in one period, hot for HotConfig.Hold after: 3 to
// 12 of the 180 at the end. Fewer and shorter runs leave a light thread on
// a CPU about 30 times less often.
func BenchmarkAgentRealRunBusy(b *testing.B) {
	selected, containers := realNode200(b)
	if cgrouptest.Require(b).CPUVersion() != "v1" {
		b.Skip("the helper moves threads into the containers' groups, which v2 allows only in threaded groups")
	}
	list := filepath.Join(b.TempDir(), "containers")
	var lines []string
	for i, c := range containers {
		busy := "50us/1s"
		if i%10 == 0 {
			busy = "10ms/200ms"
		}
		lines = append(lines, busy+"\t"+strings.Join(c, "\t"))
	}
	if err := os.WriteFile(list, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "THROTTLELAB_TEST_LOAD="+list)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() }) // before the groups' removal (registered after them)
	ready, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || ready != "ready\n" {
		b.Fatalf("the load helper: %q %v", ready, err)
	}
	t0, c0 := time.Now(), helperCPU(b, cmd.Process.Pid)
	runAgentAgainstTicker(b, selected)
	b.ReportMetric(float64(helperCPU(b, cmd.Process.Pid)-c0)/float64(time.Since(t0))*100, "load-core%")
}

// helperCPU is the CPU time process pid has used so far (/proc/PID/stat's
// utime and stime, in clock ticks of 10 ms).
func helperCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// the fields after the command's name, which is in parentheses
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	var ticks int64
	for _, v := range f[11:13] { // utime, stime (fields 14 and 15)
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// runAgentAgainstTicker runs the agent on this host's containers that
// selected picks, as BenchmarkAgentRealRun says, and reports.
func runAgentAgainstTicker(b *testing.B, selected func(watch.Identity) bool) {
	wall, steady, tickerWall := 150*time.Second, 60*time.Second, 15*time.Second
	var run, runSteady, all, allSteady, ticker time.Duration
	var runMin1, runMin2, allMin1 time.Duration // the first minute and the second
	var missed, hot, ask1 int64
	lightHot := 0 // light containers (all but every tenth) hot at the end of the by-need run
	split := 0    // containers whose view has a per-CPU split (by need only)
	once := func(always bool) (total, last, min1, min2 time.Duration, missed, hot, ask1 int64) {
		c0 := testenv.ProcessCPU(b)
		a, err := New(Config{Root: "/", Node: "bench", MaxMilli: 2000, Select: selected, Hot: HotConfig{Always: always}})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), wall)
		var c1, cm1, cm2 time.Duration
		mark := time.AfterFunc(wall-steady, func() { c1 = testenv.ProcessCPU(b); hot = a.hot.count.Load() })
		mark1 := time.AfterFunc(time.Minute, func() {
			cm1 = testenv.ProcessCPU(b)
			ask1 = a.hot.count.Load() + a.hot.capped.Load()
		})
		mark2 := time.AfterFunc(2*time.Minute, func() { cm2 = testenv.ProcessCPU(b) })
		err = a.Run(ctx)
		cancel()
		mark.Stop()
		mark1.Stop()
		mark2.Stop()
		if err != nil {
			b.Fatal(err)
		}
		c2 := testenv.ProcessCPU(b)
		views := a.Views()
		if n := len(views); n != 200 {
			b.Fatalf("%d containers summarised, want 200", n)
		}
		for _, v := range views {
			if v.CPUsUsed > 0 {
				split++
			}
		}
		_, m := a.w.SampleCounts()
		if !always {
			lightHot += logHotWhy(b, a)
		}
		return c2 - c0, c2 - c1, cm1 - c0, cm2 - cm1, m, max(hot, a.hot.count.Load()), ask1
	}
	for range b.N {
		t, l, m1, m2, m, h, a1 := once(false)
		run, runSteady, runMin1, runMin2, missed, hot, ask1 = run+t, runSteady+l, runMin1+m1, runMin2+m2, missed+m, hot+h, ask1+a1
		t, l, m1, _, _, _, _ = once(true)
		all, allSteady, allMin1 = all+t, allSteady+l, allMin1+m1

		c0 := testenv.ProcessCPU(b)
		tk := time.NewTicker(10 * time.Millisecond)
		for end := time.Now().Add(tickerWall); time.Now().Before(end); {
			<-tk.C
		}
		tk.Stop()
		ticker += testenv.ProcessCPU(b) - c0
	}
	share := func(d, over time.Duration) float64 { return float64(d) / float64(time.Duration(b.N)*over) * 100 }
	b.ReportMetric(share(run, wall), "run-core%")
	b.ReportMetric(share(runSteady, steady), "steady-core%")
	b.ReportMetric(share(all, wall), "all10ms-core%")
	b.ReportMetric(share(allSteady, steady), "all10ms-steady-core%")
	b.ReportMetric(float64(allSteady)/float64(runSteady), "all10ms/steady")
	b.ReportMetric(share(runMin1, time.Minute), "min1-core%")
	b.ReportMetric(share(runMin2, time.Minute), "min2-core%")
	b.ReportMetric(share(allMin1, time.Minute), "all10ms-min1-core%")
	b.ReportMetric(float64(allMin1)/float64(runMin1), "all10ms/min1")
	b.ReportMetric(float64(ask1)/float64(b.N), "ask1")
	b.ReportMetric(share(ticker, tickerWall), "ticker-core%")
	b.ReportMetric(float64(hot)/float64(b.N), "hot")
	b.ReportMetric(float64(lightHot)/float64(b.N), "light-hot")
	b.ReportMetric(float64(split)/float64(b.N), "split")
	b.ReportMetric(float64(missed)/float64(b.N)/(float64(wall)/float64(10*time.Millisecond))*100, "missed%")
}

func quotaFile(version string) string {
	if version == "v1" {
		return "cpu.cfs_quota_us"
	}
	return "cpu.max"
}

func quotaLine(version string) string {
	if version == "v1" {
		return "100000"
	}
	return "100000 100000"
}

// realRounds is how many 10 ms rounds agentRounds runs (a minute).
const realRounds = 6000

// agentRounds runs an agent on root for a minute of 10 ms rounds, reporting
// every 10 s (the default --interval), and returns the time it took. With
// all, its watcher reads every group at every sample, as before Every.
// everyGroup is the agent's policy picking every group (as before Every).
type everyGroup struct{ policy }

func (everyGroup) Picks(watch.Identity) bool { return true }

func agentRounds(b *testing.B, root string, selected func(watch.Identity) bool, all bool) time.Duration {
	a, err := New(Config{Root: root, Node: "bench", MaxMilli: 2000, Interval: 10 * time.Second, Select: selected})
	if err != nil {
		b.Fatal(err)
	}
	if all {
		a.w.Close()
		if a.w, err = watch.New(watch.Options{Root: root, Mapping: cgroup.WeightLinear, ByNeed: watch.ByNeed{Policy: everyGroup{policy{a}}}}); err != nil {
			b.Fatal(err)
		}
	}
	defer a.Close()
	start := time.Now()
	for k := range realRounds {
		at := time.Duration(k) * 10 * time.Millisecond
		a.Sample(at)
		if k%1000 == 0 {
			if err := a.Report(at); err != nil {
				b.Fatal(err)
			}
		}
	}
	a.Drain()
	took := time.Since(start)
	if n := len(a.Views()); n != 200 {
		b.Fatalf("%s: %d containers summarised, want 200", root, n)
	}
	return took
}

// copyHierarchies copies this host's mount table and the readable files of
// its cpu and cpuacct hierarchies and its v2 one (cgroup.ReadLayout) under
// root.
func copyHierarchies(root string) error {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(root, "proc/self"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "proc/self/mountinfo"), mi, 0o644); err != nil {
		return err
	}
	l, err := cgroup.ReadLayout("/")
	if err != nil {
		return err
	}
	mounts := map[string]bool{}
	if l.Unified != nil {
		mounts[l.Unified.MountPoint] = true
	}
	for _, c := range []string{"cpu", "cpuacct"} {
		if m, ok := l.V1[c]; ok {
			mounts[m.MountPoint] = true
		}
	}
	for m := range mounts {
		err := filepath.WalkDir(m, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			dst := filepath.Join(root, p)
			if d.IsDir() {
				return os.MkdirAll(dst, 0o755)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil // write-only
			}
			return os.WriteFile(dst, b, 0o644)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkAgentRealRunOnly is the by-need half of BenchmarkAgentRealRun
// alone (no 10 ms design, no ticker), for a CPU profile (-cpuprofile) of
// the idle agent: run-core% over the whole run, steady-core% over its last
// 60 s.
func BenchmarkAgentRealRunOnly(b *testing.B) {
	selected, _ := realNode200(b)
	wall, steady := 150*time.Second, 60*time.Second
	var run, runSteady time.Duration
	for range b.N {
		c0 := testenv.ProcessCPU(b)
		a, err := New(Config{Root: "/", Node: "bench", MaxMilli: 2000, Select: selected})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), wall)
		var c1 time.Duration
		mark := time.AfterFunc(wall-steady, func() { c1 = testenv.ProcessCPU(b) })
		err = a.Run(ctx)
		cancel()
		mark.Stop()
		if err != nil {
			b.Fatal(err)
		}
		c2 := testenv.ProcessCPU(b)
		run, runSteady = run+c2-c0, runSteady+c2-c1
	}
	b.ReportMetric(float64(run)/float64(time.Duration(b.N)*wall)*100, "run-core%")
	b.ReportMetric(float64(runSteady)/float64(time.Duration(b.N)*steady)*100, "steady-core%")
}

// BenchmarkAgentFilesRunOnly is BenchmarkAgentRealRunOnly on a copy of
// this host's hierarchies in plain files (copyHierarchies, 200 pods made
// there, no real cgroups): the agent's own code under a CPU profile
// without the kernel's cgroup reads, on any host.
func BenchmarkAgentFilesRunOnly(b *testing.B) {
	root := b.TempDir()
	if err := copyHierarchies(root); err != nil {
		b.Fatal(err)
	}
	l, err := cgroup.ReadLayout("/")
	if err != nil {
		b.Fatal(err)
	}
	var mounts []string
	for _, c := range []string{"cpu", "cpuacct"} {
		if m, ok := l.V1[c]; ok {
			mounts = append(mounts, filepath.Join(root, m.MountPoint))
		}
	}
	if len(mounts) == 0 && l.Unified != nil {
		mounts = append(mounts, filepath.Join(root, l.Unified.MountPoint))
	}
	for i := range 200 {
		pod := fmt.Sprintf("kubepods/burstable/pod%08x-2345-4678-9abc-def012345678", i)
		ctr := pod + "/" + strings.Repeat(fmt.Sprintf("c%07x", i), 8)
		for _, m := range mounts {
			if err := os.MkdirAll(filepath.Join(m, ctr), 0o755); err != nil {
				b.Fatal(err)
			}
			for name, v := range map[string]string{"cpuacct.usage": "1000\n", "cpuacct.usage_percpu": "500 500 \n", "cpu.cfs_quota_us": "100000\n", "cpu.cfs_period_us": "100000\n",
				"cpu.shares": "1024\n", "cpu.stat": "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n", "cgroup.procs": ""} {
				if err := os.WriteFile(filepath.Join(m, ctr, name), []byte(v), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	wall := 90 * time.Second
	if v := os.Getenv("AGENT_BENCH_WALL"); v != "" {
		if wall, err = time.ParseDuration(v); err != nil {
			b.Fatal(err)
		}
	}
	selected := func(id watch.Identity) bool {
		return id.Kind == watch.KindContainer && strings.HasPrefix(id.ContainerID, "c")
	}
	var run time.Duration
	for range b.N {
		c0 := testenv.ProcessCPU(b)
		a, err := New(Config{Root: root, Node: "bench", MaxMilli: 2000, Select: selected})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), wall)
		err = a.Run(ctx)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		if n := len(a.Views()); n < 200 { // more where the host had pods (or a real benchmark's) when copied
			b.Fatalf("%d containers summarised, want 200 or more", n)
		}
		run += testenv.ProcessCPU(b) - c0
	}
	b.ReportMetric(float64(run)/float64(time.Duration(b.N)*wall)*100, "run-core%")
}

// logHotWhy logs why each container of realNode200 that is hot at the end
// of a by-need run, or was made hot after its first minute, went hot (its
// need.why), and returns how many of the light ones (all but every tenth:
// BenchmarkAgentRealRunBusy) are hot.
func logHotWhy(b *testing.B, a *Agent) (lightHot int) {
	a.mu.Lock()
	cs := make([]*container, 0, len(a.containers))
	for _, c := range a.containers {
		cs = append(cs, c)
	}
	a.mu.Unlock()
	a.hot.mu.Lock()
	defer a.hot.mu.Unlock()
	for _, c := range cs {
		c.mu.Lock()
		id := c.id.ContainerID
		c.mu.Unlock()
		if len(id) < 8 {
			continue
		}
		i, err := strconv.ParseInt(strings.TrimPrefix(id[:8], "c"), 16, 64)
		if err != nil {
			continue
		}
		w := c.need.why
		if !c.need.hot && w.sums == 0 && w.throttles == 0 {
			continue
		}
		kind := "light"
		if i%10 == 0 {
			kind = "busy"
		} else if c.need.hot {
			lightHot++
		}
		b.Logf("container %d (%s): hot %v; %s", i, kind, c.need.hot, w)
	}
	return lightHot
}
