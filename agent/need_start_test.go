package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startNode is a fake cgroup v2 node (systemd driver) whose containers'
// cpu.stat the test writes: their usage and nr_throttled.
type startNode struct {
	t    *testing.T
	root string
}

func newStartNode(t *testing.T) *startNode {
	root := t.TempDir()
	n := &startNode{t: t, root: root}
	n.write("proc/self/mountinfo", "25 23 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n")
	n.write("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n")
	n.write("sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/cpu.stat", "usage_usec 0\n")
	return n
}

func (n *startNode) write(p, s string) {
	p = filepath.Join(n.root, p)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		n.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

// add makes container i (limited to 1 CPU) and returns its directory
// (relative to the root).
func (n *startNode) add(i int) string {
	uid := fmt.Sprintf("%08x_2345_4678_9abc_def012345678", i)
	dir := "sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uid + ".slice/cri-containerd-" + strings.Repeat(fmt.Sprintf("%08x", i), 8) + ".scope/"
	n.write(dir+"cgroup.procs", "4001\n")
	n.write(dir+"cpu.max", "100000 100000\n")
	n.write(dir+"cpu.max.burst", "0\n")
	n.write(dir+"cpu.weight", "10\n")
	n.set(dir, 0, 0)
	return dir
}

// set writes a container's counters: usage and nr_throttled (the gate
// above the containers, kubepods-burstable.slice, moves by the sum of theirs: the
// test keeps it moving whenever one does).
func (n *startNode) set(dir string, usage time.Duration, throttled int) {
	n.write(dir+"cpu.stat", fmt.Sprintf("usage_usec %d\nuser_usec 0\nsystem_usec 0\nnr_periods %d\nnr_throttled %d\nthrottled_usec %d\nnr_bursts 0\nburst_usec 0\n",
		usage/time.Microsecond, throttled, throttled, throttled*1000))
}

// TestAgentStartOnTheGrid is the agent's start on a node whose containers
// it finds at once (no advice yet), on a fake v2 node read by need: the
// idle container is read at 10 ms for its first grid period only, then on
// the 100 ms grid; one whose first chunk shows a burst (a period of 20 ms,
// over HotConfig.MinCores) is read at 10 ms from the grid instant that
// ends that period until its first advice; one whose cpu.stat says it was
// throttled (its usage a trickle) from the grid instant that reads the
// move on, for HotConfig.Hold; one made while the agent runs is starting,
// read at 10 ms for its whole start-up (Config.Startup), and on the grid
// once it is over and idle.
func TestAgentStartOnTheGrid(t *testing.T) {
	n := newStartNode(t)
	idle, bursty, throttled := n.add(0), n.add(1), n.add(2)
	const chunk = 10 * time.Second
	a, err := New(Config{Root: n.root, Node: "node-1", MaxMilli: 2000, Interval: time.Second, Startup: 4 * time.Second,
		Summary: SummaryConfig{Window: 2 * time.Minute, Block: 20 * time.Second, Chunk: chunk}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if !a.byNeed {
		t.Fatal("the agent does not sample by need on this node")
	}
	const (
		step        = 10 * time.Millisecond
		burstAt     = 2*time.Second + 30*time.Millisecond
		throttledAt = 3*time.Second + 50*time.Millisecond
		madeAt      = 5 * time.Second
	)
	var late string
	var gate, burstyUsage, throttledUsage time.Duration
	hotAt := map[string][]time.Duration{}
	hotOf := func(dir string) bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		c := a.containers[strings.TrimSuffix(strings.TrimPrefix(dir, "sys/fs/cgroup"), "/")]
		return c != nil && c.need.hot
	}
	end := 25 * time.Second
	for at := time.Duration(0); at <= end; at += step {
		moved := false
		if at == burstAt {
			burstyUsage += 20 * time.Millisecond
			n.set(bursty, burstyUsage, 0)
			moved = true
		}
		if at >= throttledAt && at%time.Second == 0 {
			throttledUsage += 200 * time.Microsecond // a trickle: under MinCores in any period
			n.set(throttled, throttledUsage, 1)
			moved = true
		}
		if at == madeAt {
			late = n.add(3)
		}
		if moved {
			gate += 20 * time.Millisecond
			n.write("sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/cpu.stat", fmt.Sprintf("usage_usec %d\n", gate/time.Microsecond))
		}
		a.Sample(at)
		if at%time.Second == 0 {
			if err := a.Report(at); err != nil {
				t.Fatal(err)
			}
		}
		a.Drain()
		for _, d := range []string{idle, bursty, throttled, late} {
			if d != "" && hotOf(d) {
				hotAt[d] = append(hotAt[d], at)
			}
		}
	}
	hotDuring := func(d string, from, to time.Duration) int {
		k := 0
		for _, at := range hotAt[d] {
			if at >= from && at < to {
				k++
			}
		}
		return k
	}
	period := 100 * time.Millisecond
	if k := hotDuring(idle, period, end+step); k != 0 {
		t.Errorf("the idle container, found without advice, is hot at %d instants after its first grid period (the first %v)", k, hotAt[idle][:min(5, len(hotAt[idle]))])
	}
	// The burst ends in the grid period [2.0 s, 2.1 s): read at 2.1 s.
	promoted := burstAt.Truncate(period) + period
	if k, want := hotDuring(bursty, promoted, chunk), int((chunk-promoted)/step); k != want {
		t.Errorf("the bursty container is hot at %d of the %d instants from %s (its burst's grid instant) to its first advice at %s", k, want, promoted, chunk)
	}
	if k := hotDuring(bursty, period, promoted); k != 0 {
		t.Errorf("the bursty container is hot at %d instants before its burst", k)
	}
	// v2: cpu.stat is read with the usage; the move at 4.0 s (the first
	// write of nr_throttled) is read at that grid instant.
	moved := throttledAt.Truncate(time.Second) + time.Second
	if k, want := hotDuring(throttled, moved, end+step), int((end+step-moved)/step); k != want {
		t.Errorf("the throttled container is hot at %d of the %d instants from %s (its nr_throttled's move) on", k, want, moved)
	}
	if k := hotDuring(throttled, period, moved); k != 0 {
		t.Errorf("the throttled container is hot at %d instants before its nr_throttled moved", k)
	}
	// Found at the report after it was made (inotify is not driven here),
	// starting from there for Config.Startup.
	if len(hotAt[late]) == 0 {
		t.Fatal("the container made while the agent runs was never hot")
	}
	found := hotAt[late][0]
	if found < madeAt || found > madeAt+time.Second {
		t.Errorf("the container made at %s was first hot at %s", madeAt, found)
	}
	if k, want := hotDuring(late, found, found+4*time.Second), int(4*time.Second/step); k != want {
		t.Errorf("the container made while the agent runs is hot at %d of the %d instants of its start-up", k, want)
	}
	if k := hotDuring(late, found+4*time.Second+period, end+step); k != 0 {
		t.Errorf("the container made while the agent runs, idle after its start-up, is hot at %d instants after it", k)
	}
	t.Logf("hot instants: idle %d, bursty %d (from %s), throttled %d (from %s), started %d (from %s)",
		len(hotAt[idle]), len(hotAt[bursty]), promoted, len(hotAt[throttled]), moved, len(hotAt[late]), found)
}
