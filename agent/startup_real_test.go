package agent_test

// A real-kernel test: it makes a cgroup on this host, so run it under the
// host lock (flock /tmp/throttlelab-host.lock go test ./agent -run Real).

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/agent"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/schemas/schematest"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// TestRealAgentStartupBoost: a group made on this host while the agent
// runs, with no limit, whose process is busy at its start (two threads of
// a fixed shell loop, about 3 CPU-s, then asleep) gets a start-up boost
// above its advised limit (the idle steady state's) in /advice (its schema
// held) and in the metrics, once its whole start-up is replayed. Shapes
// only: the host is shared, so the lengths vary. (Under a limit the agent
// sees a start-up throttled for longer than cfs.DefaultHold as its use
// only: the demand above the limit is not seen, so the boost is sized
// from the unlimited start here.)
func TestRealAgentStartupBoost(t *testing.T) {
	cgrouptest.Require(t)
	const startup = 8 * time.Second
	a, ctx, done, cancel := runAgent(t, time.Minute, startup)
	defer func() { cancel(); <-done }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for len(a.Views()) == 0 { // the agent's first sample
		select {
		case <-ctx.Done():
			t.Fatal("the agent found no group on this host")
		case <-tick.C:
		}
	}
	g := cgrouptest.LimitedGroup(t, 50000, 100000)
	g.SetQuota(t, -1)
	loop := "i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done"
	watchtest.StartShell(t, watchtest.WithUsage(t, g), fmt.Sprintf("{ (%s) & (%s) & wait; exec sleep 60; }", loop, loop))
	path := watchtest.CgroupPath(t, g.Dir)
	var v *agent.View
	for v == nil {
		select {
		case <-ctx.Done():
			t.Fatal("the busy start-up has no boost within 60 s")
		case <-tick.C:
		}
		for _, x := range a.Views() {
			if x.Cgroup == path && x.Startup != nil && x.Startup.Seconds >= startup.Seconds()-1.5 && x.Advice != nil {
				v = x
			}
		}
	}
	b := v.Startup.Boost
	if b == nil {
		t.Fatalf("start-up %+v: no boost (%s)", v.Startup, v.Startup.BoostWhy)
	}
	t.Logf("start-up %.1f s kept, mean %.2f cores, most in 10 ms %.2f; advised %dm; boost %+v", v.Startup.Seconds, v.Startup.MeanCores, v.Startup.MaxCores10ms, v.Advice.Recommendation.LimitMilli, b.Boost)
	if b.LimitMilli != v.Advice.Recommendation.LimitMilli {
		t.Errorf("boost sized against %dm, not the advised %dm", b.LimitMilli, v.Advice.Recommendation.LimitMilli)
	}
	if !b.Needed || b.BoostMilli <= b.LimitMilli || b.DurationSeconds < 1 || b.WorkCPUSeconds < 0.5 || b.AtLimitSeconds <= b.UnlimitedSeconds || b.VPA == nil || b.StartupCPUBoost == nil {
		t.Errorf("boost %+v: want one above the limit, for a second or more, over a start-up of 0.5 CPU-s or more the limit lengthens, rendered", b)
	}
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/advice", nil))
	schematest.Check(t, "real /advice with a start-up boost", rec.Body.Bytes())
	var doc agent.AdviceDoc
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, c := range doc.Containers {
		if c.Cgroup == path {
			seen = c.Startup != nil && c.Startup.Boost != nil && c.Startup.Boost.Needed
		}
	}
	if !seen {
		t.Errorf("/advice has no boost for %s", path)
	}
	rec = httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var cores, secs string
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if strings.Contains(l, fmt.Sprintf(`namespace=%q,pod=%q`, v.Namespace, v.Pod)) && strings.Contains(l, fmt.Sprintf(`container=%q`, v.Container)) {
			switch {
			case strings.HasPrefix(l, "throttlelab_startup_boost_cores{"):
				cores = l
			case strings.HasPrefix(l, "throttlelab_startup_boost_seconds{"):
				secs = l
			}
		}
	}
	if f := strings.Fields(cores); len(f) < 2 || f[len(f)-1] == "0" || secs == "" {
		t.Errorf("/metrics: boost %q, for %q; want both for %s", cores, secs, path)
	}
}
