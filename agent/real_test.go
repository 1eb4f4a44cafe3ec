package agent_test

// A real-kernel test: it makes a cgroup on this host, so run it under the
// host lock (flock /tmp/throttlelab-host.lock go test ./agent -run Real).

import (
	"context"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/agent"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/testenv"
	"github.com/throttlelab/throttlelab/watch"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// runAgent runs an agent on this host's cgroups (every group selected; a
// 20 s window of 2 s blocks and 1 s chunks) reporting every interval, with
// start-ups of startup, for at most 60 s: done gets Run's error once ctx
// ends (cancel ends it early).
func runAgent(t *testing.T, interval, startup time.Duration) (a *agent.Agent, ctx context.Context, done chan error, cancel context.CancelFunc) {
	t.Helper()
	a, err := agent.New(agent.Config{Root: "/", Node: "this-host", Interval: interval, Startup: startup,
		Select:  func(id watch.Identity) bool { return true },
		Summary: agent.SummaryConfig{Window: 20 * time.Second, Block: 2 * time.Second, Chunk: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
	done = make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	return a, ctx, done, cancel
}

// TestRealAgent runs the agent for real on this host's
// cgroups, until its window holds two seconds, with a spinning process under a 0.2 CPU limit, and checks the
// shapes of what it serves for that group: the limit read back, demand
// summarised, advice marked a lower bound (the group was throttled, so its
// demand above the limit was never seen) and at least its mean use.
func TestRealAgent(t *testing.T) {
	g := cgrouptest.LimitedGroup(t, 20000, 100000)
	watchtest.Start(t, watchtest.WithUsage(t, g), true)
	path := watchtest.CgroupPath(t, g.Dir)
	// Sample until the group's window holds two seconds (two chunks, one
	// block), with a generous deadline: on a loaded host (the race detector,
	// others' load) the first report and the chunks come late.
	started := time.Now()
	a, _, done, cancel := runAgent(t, time.Second, 0)
	defer cancel()
	find := func() *agent.View {
		for _, x := range a.Views() {
			if x.Cgroup == path {
				return x
			}
		}
		return nil
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case err := <-done:
			t.Fatalf("the agent stopped before its window held 2 s: %v", err)
		case <-tick.C:
			if v := find(); v != nil && v.WindowSeconds >= 2 {
				break wait
			}
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(started)
	a.Drain()
	v := find()
	if v == nil {
		t.Fatalf("the test group %s is not among the agent's containers", path)
	}
	if v.LimitMilli != 200 {
		t.Errorf("limit read back %dm, want 200m", v.LimitMilli)
	}
	if v.WindowSeconds < 2 || v.WindowSeconds > elapsed.Seconds()+0.5 {
		t.Errorf("window holds %.2f s after %.2f s of sampling", v.WindowSeconds, elapsed.Seconds())
	}
	if v.Advice == nil {
		t.Fatalf("no advice: %s", v.Why)
	}
	r := v.Advice.Recommendation
	t.Logf("mean %.3f cores, advised %dm (lower bound %v, reconstructed %v), window %.1f s", v.Advice.Sampled.MeanCores, r.LimitMilli, r.LowerBound, r.Reconstructed, v.WindowSeconds)
	most := 0.2 * 1.15
	switch {
	case testenv.Emulated() && !r.LowerBound && r.LimitMilli >= 2*200:
		// Under software emulation the 10 ms samples come irregularly and
		// late ticks let the group overrun its quota (testenv.EmulatedEnv):
		// the rebuild of the hidden demand may then take the throttling for
		// short streaks it can account for, and advise well above the limit
		// (docs/testing.md), erring high as it says: it still saw the demand
		// the quota hid.
		t.Logf("software-emulated VM: rebuilt, not a lower bound")
	case !r.LowerBound:
		t.Errorf("a spinning group under 0.2 CPU was throttled: the advice must be marked a lower bound")
	}
	if testenv.Emulated() {
		most = 0.2 * 1.5 // the overrun of late ticks, repaid in later periods
	}
	if m := v.Advice.Sampled.MeanCores; m <= 0.02 || m > most {
		t.Errorf("mean use %.3f cores under a 0.2 limit", m)
	}
	if float64(r.LimitMilli) < v.Advice.Sampled.MeanCores*1000 {
		t.Errorf("advised %dm below the mean use %.3f cores", r.LimitMilli, v.Advice.Sampled.MeanCores)
	}
}

// TestRealAgentSeesANewGroupStart: a group made on this host while the agent
// runs is found when its directory is made (the refresh is a minute away)
// and its first seconds are its start-up, kept apart from the advice.
func TestRealAgentSeesANewGroupStart(t *testing.T) {
	cgrouptest.Require(t)
	// Under software emulation the quota is enforced late (ticks come late)
	// and the overrun is repaid only in later periods, so a start-up of two
	// seconds can read twice the limit: there the start-up is longer and
	// its mean is held to the bound TestRealAgent uses under emulation.
	startup, atLeast, most := 2*time.Second, 1.0, 0.2*1.15
	if testenv.Emulated() {
		startup, atLeast, most = 6*time.Second, 4.0, 0.2*1.5
	}
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
	g := cgrouptest.LimitedGroup(t, 20000, 100000)
	watchtest.Start(t, watchtest.WithUsage(t, g), true)
	path := watchtest.CgroupPath(t, g.Dir)
	for {
		select {
		case <-ctx.Done():
			t.Fatal("the group made while the agent ran has no start-up within 60 s (not found before the refresh a minute away?)")
		case <-tick.C:
		}
		for _, v := range a.Views() {
			if v.Cgroup == path && v.Startup != nil && v.Startup.Seconds >= atLeast {
				t.Logf("start-up %.1f s, mean %.3f cores, most in 10 ms %.2f", v.Startup.Seconds, v.Startup.MeanCores, v.Startup.MaxCores10ms)
				if v.Startup.MeanCores <= 0.02 || v.Startup.MeanCores > most {
					t.Errorf("start-up mean use %.3f cores of a group spinning under 0.2", v.Startup.MeanCores)
				}
				return
			}
		}
	}
}
