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

// TestRealStartupJVMBoost measures a JVM's start-up (testdata/startup/
// Boot.java, compiled with the host's javac: class loading, then a warm-up
// on two threads) in a group on this host: unlimited, sampled every 10 ms
// for its profile; under 200m; and under 400m with the boost sized from
// the profile (startup.Plan: the quota raised to the boost at its start,
// set back after the boost's duration). The measured lengths (start to
// exit) against the predicted, within 30%: under the limit, under the
// boost, and the time the boost saves.
//
// It is a measurement, run with THROTTLELAB_MEASURE_JVM=1: on the shared
// 2-CPU host it was written on it missed the 30% (docs/agent.md, The
// start-up boost), so it does not gate the suite.
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
	classes := t.TempDir()
	if out, err := exec.Command("javac", "-d", classes, "testdata/startup/Boot.java").CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	g := cgrouptest.LimitedGroup(t, jvmLimitMilli*100, 100000)
	dirs := watchtest.WithUsage(t, g)
	run := func(quotaUsec int, boost func(), sample bool) (time.Duration, []time.Duration, []time.Duration) {
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
		var at, usage []time.Duration
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
		took := time.Since(start)
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatalf("java: %v", err)
		}
		if sample {
			at, usage = append(at, took), append(usage, usageOf(t, dirs)-u0)
		}
		return took, at, usage
	}
	run(-1, nil, false) // warm the page cache and the class data
	unlimited, at, usage := run(-1, nil, true)
	p := startup.FromSamples(at, usage, 0, 10*time.Millisecond, float64(runtime.NumCPU()))
	b, err := startup.Plan(p, jvmLimitMilli, startup.Options{MaxCores: float64(runtime.NumCPU())})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("unlimited %.2f s (%.2f CPU-s); predicted %.2f s under %dm; boost %dm for %d s, predicted %.2f s", unlimited.Seconds(), b.WorkCPUSeconds, b.AtLimitSeconds, jvmLimitMilli, b.BoostMilli, b.DurationSeconds, b.BoostedSeconds)
	if !b.Needed {
		t.Fatalf("the JVM's start-up needs no boost under %dm: %s", jvmLimitMilli, b.Note)
	}
	limited, _, _ := run(jvmLimitMilli*100, nil, false)
	var back *time.Timer
	boosted, _, _ := run(int(b.BoostMilli)*100, func() {
		back = time.AfterFunc(time.Duration(b.DurationSeconds)*time.Second, func() { g.SetQuota(t, jvmLimitMilli*100) })
	}, false)
	back.Stop()
	g.SetQuota(t, jvmLimitMilli*100)
	t.Logf("measured %.2f s under %dm, %.2f s with the boost: saved %.2f s, predicted %.2f s", limited.Seconds(), jvmLimitMilli, boosted.Seconds(), (limited - boosted).Seconds(), b.AtLimitSeconds-b.BoostedSeconds)
	within := func(what string, got, want float64) {
		if math.Abs(got-want) > 0.3*want {
			t.Errorf("%s: measured %.2f s, predicted %.2f s: more than 30%% apart", what, got, want)
		}
	}
	within("under the limit", limited.Seconds(), b.AtLimitSeconds)
	within("under the boost", boosted.Seconds(), b.BoostedSeconds)
	within("the time the boost saves", (limited - boosted).Seconds(), b.AtLimitSeconds-b.BoostedSeconds)
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
