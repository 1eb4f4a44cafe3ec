package agent

import (
	"github.com/throttlelab/throttlelab/startup"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/schemas/schematest"
)

// startupCores spreads each interval's use over the 10 ms grid from the
// end of the prefill and lead: by hand, a 25 ms interval of 50 ms CPU (2
// cores) covers cells 0, 1 and half of 2; a 5 ms one of 2.5 ms (0.5
// cores), the other half of 2.
func TestStartupCores(t *testing.T) {
	ms := time.Millisecond
	d := &advise.Demand{At: []time.Duration{0, 100 * ms, 125 * ms, 130 * ms}, Usage: []time.Duration{0, 5 * ms, 55 * ms, 57500 * time.Microsecond}}
	got := startupCores(d, 100*ms)
	want := []float64{2, 2, 1.25}
	if len(got) != len(want) {
		t.Fatalf("cells %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > 1e-6 {
			t.Errorf("cell %d: %.4f cores, want %.4f", i, got[i], want[i])
		}
	}
}

// busyStart runs the fake node 3 s, adds the pod 0a1b... (a container that
// starts while the agent runs), keeps it extra cores busier than the
// fake's pattern for its first busyFor, then runs the node on to 6 s.
func busyStart(t *testing.T, n *fakeNode, extra float64, busyFor time.Duration) {
	t.Helper()
	pod := filepath.Join(n.root, "sys/fs/cgroup/cpu,cpuacct/kubepods/besteffort/pod0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d")
	saved := filepath.Join(t.TempDir(), "pod")
	if err := os.CopyFS(saved, os.DirFS(pod)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(pod); err != nil {
		t.Fatal(err)
	}
	n.scan()
	n.run(3 * time.Second)
	if err := os.CopyFS(pod, os.DirFS(saved)); err != nil {
		t.Fatal(err)
	}
	old := map[string]time.Duration{}
	for _, f := range n.files {
		old[f.path] = f.usage
	}
	n.scan()
	for i := range n.files {
		n.files[i].usage = old[n.files[i].path]
	}
	for s := time.Duration(0); s < 6*time.Second; s += 10 * time.Millisecond {
		if s < busyFor {
			for i := range n.files {
				if strings.Contains(n.files[i].path, "pod0a1b2c3d") {
					n.files[i].usage += time.Duration(extra * float64(10*time.Millisecond))
				}
			}
		}
		n.run(10 * time.Millisecond)
	}
}

func newStartup(t *testing.T, doc AdviceDoc) *View {
	t.Helper()
	for _, c := range doc.Containers {
		if strings.Contains(c.Cgroup, "pod0a1b2c3d") && c.Container != "" {
			return c
		}
	}
	for _, c := range doc.Containers {
		if strings.Contains(c.Cgroup, "pod0a1b2c3d") {
			return c
		}
	}
	t.Fatal("no new container in /advice")
	return nil
}

// TestAgentStartupBoost: a container that starts while the agent runs and
// is busy at its start (1.5 cores over the fake's pattern for 2.5 s, of
// which the agent sees the last 1.5 s: the fake tree has no inotify, the
// container is found at the next report, 1 s on) gets
// a boost above its advised limit in /advice (schema held) and in the
// metrics; one whose start-up is as busy as its steady state gets none.
func TestAgentStartupBoost(t *testing.T) {
	n := newFakeNode(t, "v1-joined-kubepods-cgroupfs", nil)
	n.a.cfg.Startup = 2 * time.Second
	busyStart(t, n, 1.5, 2500*time.Millisecond)
	h := n.a.Handler()
	_, body := get(t, h, "/advice")
	schematest.Check(t, "/advice with a start-up boost", []byte(body))
	c := newStartup(t, adviceOf(t, h))
	st := c.Startup
	if st == nil || st.Boost == nil {
		t.Fatalf("the busy start-up has no boost: %+v", st)
	}
	b := st.Boost
	t.Logf("start-up: %+v; boost %+v", st, b.Boost)
	if c.Advice == nil || b.LimitMilli != c.Advice.Recommendation.LimitMilli {
		t.Fatalf("boost sized against %dm, not the advised limit (advice %v)", b.LimitMilli, c.Advice != nil)
	}
	if !b.Needed || b.BoostMilli <= b.LimitMilli || b.BoostMilli > 2000 || b.DurationSeconds < 1 || b.VPA == nil || b.StartupCPUBoost == nil {
		t.Fatalf("boost %+v: want one above the advised limit, at most the node's 2 CPUs, for a second or more, rendered", b)
	}
	if b.Capped != (b.BoostMilli == 2000) || (!b.Capped && b.BoostedSeconds > b.TargetSeconds+1e-9) {
		t.Errorf("boost %dm: capped %v, boosted %.2f s against a target of %.2f s", b.BoostMilli, b.Capped, b.BoostedSeconds, b.TargetSeconds)
	}
	// The fake's pattern alone is 1.3 CPU-s over the 2 s (TestAgentStartupNoBoost).
	if b.WorkCPUSeconds < 1.3+0.9*1.5*1.5 || b.UnlimitedSeconds < 1.4 {
		t.Errorf("start-up work %.2f CPU-s over %.2f s: want the 1.5 s seen at 1.5 extra cores in it", b.WorkCPUSeconds, b.UnlimitedSeconds)
	}
	_, metrics := get(t, h, "/metrics")
	var cores, secs int
	for _, l := range strings.Split(metrics, "\n") {
		if strings.Contains(l, `pod="0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"`) {
			if strings.HasPrefix(l, "throttlelab_startup_boost_cores{") {
				cores++
			}
			if strings.HasPrefix(l, "throttlelab_startup_boost_seconds{") {
				secs++
			}
		}
	}
	if cores == 0 || secs == 0 {
		t.Errorf("metrics: %d boost_cores and %d boost_seconds series for the new container, want them", cores, secs)
	}
}

// TestAgentStartupNoBoost: a start-up no busier than the steady state
// needs no boost at the advised limit, and says so.
func TestAgentStartupNoBoost(t *testing.T) {
	n := newFakeNode(t, "v1-joined-kubepods-cgroupfs", nil)
	n.a.cfg.Startup = 2 * time.Second
	busyStart(t, n, 0, 0)
	c := newStartup(t, adviceOf(t, n.a.Handler()))
	if c.Startup == nil || c.Startup.Boost == nil {
		t.Fatalf("start-up %+v: want its boost figures", c.Startup)
	}
	t.Logf("boost %+v", c.Startup.Boost.Boost)
	if c.Startup.Boost.Needed || c.Startup.Boost.VPA != nil {
		t.Errorf("a start-up like its steady state got a boost: %+v", c.Startup.Boost.Boost)
	}
}

// The edges, one line each in /advice: a boost above the node's CPUs is
// capped and says so; a start-up too short to measure has no boost and
// says why; a group seen starting whose counter falls (made again) starts
// again, and the newest start-up is the one advised.
func TestAgentStartupEdges(t *testing.T) {
	t.Run("capped", func(t *testing.T) {
		n := newFakeNode(t, "v1-joined-kubepods-cgroupfs", nil)
		n.a.cfg.Startup = 2 * time.Second
		n.a.cfg.MaxMilli = 1200 // the node's CPUs, for the cap only (the ladder is made)
		busyStart(t, n, 1.5, 2500*time.Millisecond)
		b := newStartup(t, adviceOf(t, n.a.Handler())).Startup.Boost
		if b == nil || !b.Capped || b.BoostMilli != 1200 || !strings.Contains(b.Note, "capped at the node's 1.2 allocatable CPUs") || b.BoostedSeconds <= b.TargetSeconds {
			t.Fatalf("boost %+v: want capped at 1200m, said, over its target", b)
		}
	})
	t.Run("too short", func(t *testing.T) {
		n := newFakeNode(t, "v1-joined-kubepods-cgroupfs", nil)
		n.a.cfg.Startup = 150 * time.Millisecond
		busyStart(t, n, 1.5, 2500*time.Millisecond)
		st := newStartup(t, adviceOf(t, n.a.Handler())).Startup
		if st == nil || st.Boost != nil || !strings.Contains(st.BoostWhy, "too short to measure") {
			t.Fatalf("a 150 ms start-up: %+v, want no boost, said why", st)
		}
	})
	t.Run("restarted", func(t *testing.T) {
		n := newFakeNode(t, "v1-joined-kubepods-cgroupfs", nil)
		n.a.cfg.Startup = 2 * time.Second
		busyStart(t, n, 1.5, 2500*time.Millisecond)
		first := *newStartup(t, adviceOf(t, n.a.Handler())).Startup.Boost
		// made again: its counters from zero, a lighter start-up (0.5
		// extra cores for 2 s)
		for i := range n.files {
			if strings.Contains(n.files[i].path, "pod0a1b2c3d") {
				n.files[i].usage = 0
			}
		}
		for s := time.Duration(0); s < 4*time.Second; s += 10 * time.Millisecond {
			for i := range n.files {
				if s < 2*time.Second && strings.Contains(n.files[i].path, "pod0a1b2c3d") {
					n.files[i].usage += 5 * time.Millisecond
				}
			}
			n.run(10 * time.Millisecond)
		}
		b := newStartup(t, adviceOf(t, n.a.Handler())).Startup.Boost
		if b == nil || !strings.Contains(b.Note, "the newest of 2 start-ups") || b.WorkCPUSeconds >= first.WorkCPUSeconds {
			t.Fatalf("after a restart: %+v; want the newer, lighter start-up (the first: %.2f CPU-s), said", b, first.WorkCPUSeconds)
		}
	})
}

func TestParseShare(t *testing.T) {
	for in, want := range map[string]float64{"": 0, "10%": 0.1, "0.25": 0.25, "100%": 1} {
		if got, err := parseShare(in); err != nil || math.Abs(got-want) > 1e-12 {
			t.Errorf("parseShare(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "0%", "150%", "-0.1", "ten"} {
		if _, err := parseShare(in); err == nil {
			t.Errorf("parseShare(%q): no error", in)
		}
	}
}

// TestStartupHidden: a start-up throttled in half or more of the periods
// its profile spans has its demand hidden by its limit; one throttled
// less, or never, does not.
func TestStartupHidden(t *testing.T) {
	p := startup.Profile{Step: startupStep, Cores: make([]float64, 600)} // 6 s: 60 periods
	for i := range p.Cores {
		p.Cores[i] = 0.2
	}
	for _, c := range []struct {
		b    *Block
		want bool
	}{
		{nil, false},
		{&Block{}, false},
		{&Block{Throttled: 29}, false},
		{&Block{Throttled: 30}, true},
		{&Block{Throttled: 52}, true},
	} {
		if got := startupHidden(c.b, p); got != c.want {
			t.Errorf("block %+v: hidden %v, want %v", c.b, got, c.want)
		}
	}
}
