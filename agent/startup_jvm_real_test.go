package agent_test

// A real-kernel test with a JVM: it makes a cgroup on this host and runs
// java in it, so run it under the host lock
// (flock /tmp/throttlelab-host.lock go test ./agent -run RealStartupJVM).

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/startup"
	"github.com/throttlelab/throttlelab/testenv"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// jvmLimitMilli is the limit the JVM's start-up is measured under.
const jvmLimitMilli = 200

// jvmRuns is how many rounds (profile, limited, boosted) one measurement
// makes; THROTTLELAB_MEASURE_JVM_RUNS changes it.
const jvmRuns = 5

// TestRealStartupJVMBoost measures a JVM's start-up (testdata/startup/
// Boot.java, compiled with the host's javac: class loading, then a warm-up
// on two threads) in a group on this host, jvmRuns rounds of: unlimited,
// sampled every 10 ms for its profile; under 200m; and under the boost
// sized from that profile (startup.Plan: the quota raised before the JVM
// starts, as a boost applied at admission is, set back after the boost's
// duration). The measured lengths (start to exit) against the predicted:
// the time the boost saves within 30% in all but one round, the lengths
// under the limit and under the boost logged beside them.
//
// Two causes of a miss are held apart, not measured away. The host's
// contention: the group runs with a weight ten times the default's (a
// pod with a large request), so the other work on the host moves out of
// its way; the load average is logged with every round
// (THROTTLELAB_MEASURE_JVM_WEIGHT=default leaves the default weight: the
// control). The JVM's view of
// the quota: it sizes its GC and compiler threads from the CPUs it sees
// at its start (all of the host's unlimited, one at 200m, two under a
// boost over 1000m), so every run fixes -XX:ActiveProcessorCount=2, the
// view the unlimited profile was taken with.
//
// It is a measurement, run with THROTTLELAB_MEASURE_JVM=1 under the host
// lock (docs/agent.md, The start-up boost): it does not gate the suite.
func TestRealStartupJVMBoost(t *testing.T) {
	if os.Getenv("THROTTLELAB_MEASURE_JVM") != "1" {
		t.Skip("a measurement: set THROTTLELAB_MEASURE_JVM=1 (and hold the host lock) to run it")
	}
	cgrouptest.Require(t)
	if _, err := exec.LookPath("javac"); err != nil {
		if testenv.InCI() {
			t.Fatal("no javac on this host: install a JDK (Debian: default-jdk-headless)")
		}
		t.Skip("no javac on this host: install a JDK to measure a JVM's start-up")
	}
	runs := jvmRuns
	if v := os.Getenv("THROTTLELAB_MEASURE_JVM_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("THROTTLELAB_MEASURE_JVM_RUNS=%q: give a number of rounds, 1 or more", v)
		}
		runs = n
	}
	classes := t.TempDir()
	if out, err := exec.Command("javac", "-d", classes, "testdata/startup/Boot.java").CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	g := cgrouptest.LimitedGroup(t, jvmLimitMilli*100, 100000)
	dirs := watchtest.WithUsage(t, g)
	if os.Getenv("THROTTLELAB_MEASURE_JVM_WEIGHT") != "default" { // default: the control, in the host's contention
		heavyWeight(t, g)
	}
	run := func(quotaUsec int, boost func(), sample bool) (took, cpu time.Duration, at, usage []time.Duration) {
		g.SetQuota(t, quotaUsec)
		var join strings.Builder
		for _, d := range dirs {
			fmt.Fprintf(&join, "echo $$ > '%s/cgroup.procs' && ", d)
		}
		cmd := exec.Command("sh", "-c", join.String()+"exec java -XX:ActiveProcessorCount=2 -Xshare:auto -cp "+classes+" Boot 6000000")
		u0 := usageOf(t, dirs)
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if boost != nil {
			boost()
		}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		if sample {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				for {
					at, usage = append(at, time.Since(start)), append(usage, usageOf(t, dirs)-u0)
					select {
					case <-stop:
						return
					case <-tick.C:
					}
				}
			}()
		}
		err := cmd.Wait()
		took = time.Since(start)
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatalf("java: %v", err)
		}
		cpu = usageOf(t, dirs) - u0
		if sample {
			at, usage = append(at, took), append(usage, cpu)
		}
		return took, cpu, at, usage
	}
	run(-1, nil, false) // warm the page cache and the class data
	t.Logf("| load | unlimited | under %dm: predicted / measured | boost | with the boost: predicted / measured | saved: predicted / measured |", jvmLimitMilli)
	hits := 0
	for i := 0; i < runs; i++ {
		load := loadAvg()
		unlimited, work, at, usage := run(-1, nil, true)
		p := startup.FromSamples(at, usage, 0, 10*time.Millisecond, float64(runtime.NumCPU()))
		b, err := startup.Plan(p, jvmLimitMilli, startup.Options{MaxCores: float64(runtime.NumCPU())})
		if err != nil {
			t.Fatal(err)
		}
		if !b.Needed {
			t.Fatalf("the JVM's start-up needs no boost under %dm: %s", jvmLimitMilli, b.Note)
		}
		limited, limitedCPU, _, _ := run(jvmLimitMilli*100, nil, false)
		var back *time.Timer
		boosted, boostedCPU, _, _ := run(int(b.BoostMilli)*100, func() {
			back = time.AfterFunc(time.Duration(b.DurationSeconds)*time.Second, func() { g.SetQuota(t, jvmLimitMilli*100) })
		}, false)
		back.Stop()
		// The boost may have ended before the start-up did: the prediction
		// counts the rest at the limit (equal to BoostedSeconds when the
		// duration holds it).
		n := p.End(startup.Options{})
		predBoosted := p.LengthBoosted(n, float64(b.BoostMilli)/1000, float64(b.DurationSeconds), float64(jvmLimitMilli)/1000)
		saved, predSaved := (limited - boosted).Seconds(), b.AtLimitSeconds-predBoosted
		ok := math.Abs(saved-predSaved) <= 0.3*predSaved
		if ok {
			hits++
		}
		t.Logf("| %s | %.2f s, %.2f CPU-s | %.2f / %.2f s (%.2f CPU-s) | %dm, %d s | %.2f / %.2f s (%.2f CPU-s) | %.2f / %.2f s (%+.0f%%) |",
			load, unlimited.Seconds(), work.Seconds(), b.AtLimitSeconds, limited.Seconds(), limitedCPU.Seconds(), b.BoostMilli, b.DurationSeconds,
			predBoosted, boosted.Seconds(), boostedCPU.Seconds(), predSaved, saved, 100*(saved-predSaved)/predSaved)
	}
	g.SetQuota(t, jvmLimitMilli*100)
	t.Logf("the time the boost saves within 30%% of the predicted in %d of %d rounds", hits, runs)
	if hits < runs-1 {
		t.Errorf("the time the boost saves within 30%% of the predicted in %d of %d rounds, want %d or more", hits, runs, runs-1)
	}
}

// heavyWeight gives g ten times the default CPU weight (cpu.shares 10240
// on v1, cpu.weight 1000 on v2): the host's other work moves out of the
// measured JVM's way as it does for a pod with a large request. The group
// goes when the test ends, and its weight with it.
func heavyWeight(t *testing.T, g *cgrouptest.Group) {
	file, v := "cpu.weight", "1000"
	if g.Version == "v1" {
		file, v = "cpu.shares", "10240"
	}
	if err := os.WriteFile(filepath.Join(g.Dir, file), []byte(v), 0o644); err != nil {
		t.Fatalf("writing %s: %v", filepath.Join(g.Dir, file), err)
	}
}

// loadAvg is the host's 1-, 5- and 15-minute load average.
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// usageOf is the group's cumulative CPU time: cpuacct.usage (v1) in the
// last of dirs, else cpu.stat's usage_usec (v2).
func usageOf(t *testing.T, dirs []string) time.Duration {
	d := dirs[len(dirs)-1]
	if b, err := os.ReadFile(filepath.Join(d, "cpuacct.usage")); err == nil {
		ns, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return time.Duration(ns)
	}
	b, err := os.ReadFile(filepath.Join(d, "cpu.stat"))
	if err != nil {
		t.Error(err)
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "usage_usec "); ok {
			us, _ := strconv.ParseInt(v, 10, 64)
			return time.Duration(us) * time.Microsecond
		}
	}
	return 0
}
