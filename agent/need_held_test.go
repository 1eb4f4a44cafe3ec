package agent

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestIdleSamplesHeldAgree runs two agents by need in step on one fake v2
// node: one takes every sample at once (Config.takeIdle), the other holds
// the samples that find a cold container with advice idle and takes them
// at its next sample that is not, or at the next report (observe's
// catchUp). The containers: one idle throughout, one that bursts over its
// lowest pick after its first advice (it must be hot from the grid
// instant that reads the burst, in both), one whose nr_throttled moves
// after its first advice, one busy on and off. At every instant both
// agents have the same containers hot; after each report both hold the
// same summaries (blocks, buckets, the open chunk's intervals), the same
// sampling state and the same advice; and the holding agent held samples
// (else the test tests nothing).
func TestIdleSamplesHeldAgree(t *testing.T) {
	n := newStartNode(t)
	dirs := []string{n.add(0), n.add(1), n.add(2), n.add(3)}
	bursty, throttled, onoff := dirs[1], dirs[2], dirs[3] // dirs[0] idle throughout
	const chunk = 10 * time.Second
	mk := func(takeIdle bool) *Agent {
		a, err := New(Config{Root: n.root, Node: "node-1", MaxMilli: 2000, Interval: time.Second, takeIdle: takeIdle,
			Summary: SummaryConfig{Window: 2 * time.Minute, Block: 20 * time.Second, Chunk: chunk}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		if !a.byNeed {
			t.Fatal("the agent does not sample by need on this node")
		}
		return a
	}
	each, held := mk(true), mk(false)
	const step = 10 * time.Millisecond
	burstAt := 2*chunk + 3*time.Second + 40*time.Millisecond
	throttledAt := 2*chunk + 5*time.Second
	var gate, burstyUsage, throttledUsage, onoffUsage time.Duration
	var thr int
	heldMax := 0
	burstHot := map[bool]time.Duration{}
	containerOf := func(a *Agent, dir string) *container {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.containers[strings.TrimSuffix(strings.TrimPrefix(dir, "sys/fs/cgroup"), "/")]
	}
	end := 4 * chunk
	for at := time.Duration(0); at <= end; at += step {
		moved := time.Duration(0)
		if at == burstAt || at == burstAt+step {
			burstyUsage += 40 * time.Millisecond // two threads: 80 ms of a period
			n.set(bursty, burstyUsage, 0)
			moved += 40 * time.Millisecond
		}
		if at == throttledAt {
			throttledUsage += 200 * time.Microsecond
			thr++
			n.set(throttled, throttledUsage, thr)
			moved += 200 * time.Microsecond
		}
		if (at/(3*time.Second))%2 == 1 && at%(50*time.Millisecond) == 0 {
			onoffUsage += 3 * time.Millisecond
			n.set(onoff, onoffUsage, 0)
			moved += 3 * time.Millisecond
		}
		if moved > 0 {
			gate += moved
			n.write("sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/cpu.stat", fmt.Sprintf("usage_usec %d\n", gate/time.Microsecond))
		}
		report := at%time.Second == 0
		for _, a := range []*Agent{each, held} {
			a.Sample(at)
			if report {
				if err := a.Report(at); err != nil {
					t.Fatal(err)
				}
			}
			a.Drain()
		}
		for _, d := range dirs {
			ce, ch := containerOf(each, d), containerOf(held, d)
			if (ce == nil) != (ch == nil) {
				t.Fatalf("%s: container %s known to one agent only", at, d)
			}
			if ce == nil {
				continue
			}
			heldMax = max(heldMax, len(ch.pending))
			if ce.need.hot != ch.need.hot {
				t.Fatalf("%s: %s hot %v taking every sample, %v holding idle ones", at, d, ce.need.hot, ch.need.hot)
			}
			if d == bursty && ce.need.hot && burstHot[true] == 0 && at > 2*chunk {
				burstHot[true] = at
			}
			if !report {
				continue
			}
			ce.mu.Lock()
			ch.mu.Lock()
			se, sh := ce.sum, ch.sum
			same := reflect.DeepEqual(se.state(), sh.state()) && string(se.deltas) == string(sh.deltas) && se.n == sh.n && se.lastAt == sh.lastAt &&
				se.cores == sh.cores && ce.need.hotUntil == ch.need.hotUntil && ce.need.gridAt == ch.need.gridAt && ce.need.heat == ch.need.heat
			ce.mu.Unlock()
			ch.mu.Unlock()
			if !same {
				t.Fatalf("%s: %s's summary or sampling state differs between taking every sample and holding idle ones", at, d)
			}
		}
	}
	if heldMax == 0 {
		t.Fatal("no sample was held: the idle containers were not idle to the agent")
	}
	want := burstAt + 2*step // the grid instant that reads the burst: its first after it
	for !each.cfg.Summary.OnGrid(want, each.off) {
		want += step
	}
	if burstHot[true] != want {
		t.Errorf("the bursty container went hot at %s after its first advice, want %s (the grid instant that reads its burst)", burstHot[true], want)
	}
	ve, _ := json.Marshal(each.Views())
	vh, _ := json.Marshal(held.Views())
	if string(ve) != string(vh) {
		t.Errorf("the advice differs between taking every sample and holding idle ones:\n%s\n%s", ve, vh)
	}
	t.Logf("at most %d samples held for one container; the bursty one hot from %s", heldMax, burstHot[true])
}
