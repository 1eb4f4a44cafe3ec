package agent_test

// A real-kernel test: it makes a cgroup on this host, so run it under the
// host lock (flock /tmp/throttlelab-host.lock go test ./agent -run Real).

import (
	"fmt"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/agent"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// TestRealAgentPerCPU: a group with two busy loops, one held to each of
// two CPUs, under a limit of 1.5 CPUs, is throttled, so the agent samples
// it every 10 ms (hot) and reads its per-CPU split (v1's
// cpuacct.usage_percpu, v2's threads by CPU): its view must say it ran on
// 2 CPUs, and the metrics must carry throttlelab_container_cpus_used. In
// the VM matrix this is the only test of the v2 per-thread reader inside
// the agent.
func TestRealAgentPerCPU(t *testing.T) {
	if runtime.NumCPU() < 2 {
		cgrouptest.Unavailable(t, "the per-CPU split needs 2 CPUs; this host has %d", runtime.NumCPU())
	}
	g := cgrouptest.LimitedGroup(t, 150000, 100000)
	dirs := watchtest.WithUsage(t, g)
	watchtest.SpinOn(t, dirs, 0)
	watchtest.SpinOn(t, dirs, 1)
	path := watchtest.CgroupPath(t, g.Dir)
	a, ctx, done, cancel := runAgent(t, time.Second, 0)
	defer func() { cancel(); <-done }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var v *agent.View
	for v == nil || v.CPUsUsed < 2 {
		select {
		case <-ctx.Done():
			if v == nil {
				t.Fatalf("the test group %s is not among the agent's containers after 60 s", path)
			}
			t.Fatalf("after %.1f s of window the view says the group ran on %d CPUs, want 2 (two busy loops held to CPUs 0 and 1)", v.WindowSeconds, v.CPUsUsed)
		case err := <-done:
			t.Fatalf("the agent stopped: %v", err)
		case <-tick.C:
		}
		v = nil
		for _, x := range a.Views() {
			if x.Cgroup == path {
				v = x
			}
		}
	}
	if v.CPUsUsed > runtime.NumCPU() {
		t.Errorf("the view says %d CPUs on a host of %d", v.CPUsUsed, runtime.NumCPU())
	}
	t.Logf("ran on %d CPUs after %.1f s of window", v.CPUsUsed, v.WindowSeconds)
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var line string
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(l, "throttlelab_container_cpus_used{") && strings.Contains(l, fmt.Sprintf(`namespace=%q,pod=%q`, v.Namespace, v.Pod)) && strings.Contains(l, fmt.Sprintf(`container=%q`, v.Container)) {
			line = l
		}
	}
	if f := strings.Fields(line); len(f) < 2 || f[len(f)-1] == "0" {
		t.Errorf("/metrics has no throttlelab_container_cpus_used for %s above 0: %q", path, line)
	}
}
