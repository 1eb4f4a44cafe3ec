package agent

// A real-kernel test: it makes cgroups on this host, so run it under the
// host lock (flock /tmp/throttlelab-host.lock go test ./agent -run RealPod).

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/watch"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// TestRealPodLevelLimit makes a pod's group under kubepods with a quota
// of 0.3 CPU and two container groups beneath it without one, each with a
// spinning process: the pod's quota binds, the containers' do not. The
// agent summarises the pod's own group (container "", its limit read
// back), advises for it and predicts it throttled at its limit, and the
// pod's own cgroup counts throttled periods; nothing is left behind.
func TestRealPodLevelLimit(t *testing.T) {
	base := cgrouptest.LimitedGroup(t, 100000, 100000)
	base.SetQuota(t, -1)
	dirs := watchtest.WithUsage(t, base)
	mkdir := func(rel string) {
		for _, d := range dirs {
			p := filepath.Join(d, rel)
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := os.Remove(p); err != nil {
					t.Errorf("removing %s: %v", p, err)
				}
			})
		}
	}
	const pod = "kubepods/burstable/pod0000beef-2345-4678-9abc-def012345678"
	mkdir("kubepods")
	mkdir("kubepods/burstable")
	mkdir(pod)
	write := func(rel, file, v string) {
		if err := os.WriteFile(filepath.Join(base.Dir, rel, file), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if base.Version == "v1" {
		write(pod, "cpu.cfs_period_us", "100000")
		write(pod, "cpu.cfs_quota_us", "30000")
	} else {
		write(pod, "cpu.max", "30000 100000")
	}
	var ctrs []string
	for _, id := range []string{"a", "b"} {
		ctr := pod + "/" + strings.Repeat("c"+id+"c"+id, 16)
		mkdir(ctr)
		ctrs = append(ctrs, ctr)
	}
	for _, ctr := range ctrs {
		var in []string
		for _, d := range dirs {
			in = append(in, filepath.Join(d, ctr))
		}
		watchtest.Start(t, in, true)
	}
	podPath := watchtest.CgroupPath(t, filepath.Join(base.Dir, pod))

	a, err := New(Config{Root: "/", Node: "this-host", Interval: time.Second,
		Select: func(id watch.Identity) bool {
			return id.Kind == watch.KindContainer && (strings.HasPrefix(id.ContainerID, "cac") || strings.HasPrefix(id.ContainerID, "cbc"))
		},
		Summary: SummaryConfig{Window: 20 * time.Second, Block: 2 * time.Second, Chunk: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	find := func() *View {
		for _, v := range a.Views() {
			if v.Cgroup == podPath {
				return v
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
			t.Fatalf("the agent stopped before the pod's window held 3 s: %v", err)
		case <-tick.C:
			if v := find(); v != nil && v.WindowSeconds >= 3 && v.Advice != nil {
				break wait
			}
		}
	}
	_, metrics := get(t, a.Handler(), "/metrics")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	v := find()
	if v.Kind != KindPod || v.Container != "" {
		t.Errorf("the pod's entry is kind %q container %q, want pod and \"\"", v.Kind, v.Container)
	}
	if v.LimitMilli != 300 {
		t.Errorf("the pod's limit read back %dm, want 300m", v.LimitMilli)
	}
	r := v.Advice.Recommendation
	var atLimit float64 = -1
	for _, e := range v.Advice.Evaluations {
		if e.LimitMilli == 300 && e.BurstMilli == 0 {
			atLimit = e.ThrottledRatio
		}
	}
	t.Logf("pod: mean %.3f cores, advised %dm (lower bound %v), predicted throttled %.3f at its 300m, window %.1f s",
		v.Advice.Sampled.MeanCores, r.LimitMilli, r.LowerBound, atLimit, v.WindowSeconds)
	if m := v.Advice.Sampled.MeanCores; m < 0.15 || m > 0.3*1.5 {
		t.Errorf("the pod's summed use %.3f cores under its 0.3 quota", m)
	}
	if atLimit <= 0.5 {
		t.Errorf("predicted throttled %.3f of periods at the pod's 300m with two spinning containers, want most", atLimit)
	}
	if !r.LowerBound && r.LimitMilli <= 300 {
		t.Errorf("advised %dm, not a lower bound, for a pod throttled at 300m", r.LimitMilli)
	}
	// The pod's own cgroup counts its throttled periods (its series,
	// container ""): more than none.
	throttled := -1.0
	sc := bufio.NewScanner(strings.NewReader(metrics))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "container_cpu_cfs_throttled_periods_total{") && strings.Contains(l, `id="`+podPath+`"`) && strings.Contains(l, `container=""`) {
			throttled, _ = strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
		}
	}
	if throttled <= 0 {
		t.Errorf("the pod's series counts %v throttled periods (-1: no series with container \"\")", throttled)
	}
	for _, x := range a.Views() {
		if strings.HasPrefix(x.Cgroup, podPath+"/") && x.LimitMilli != 0 {
			t.Errorf("container %s has a limit %dm read back; it has none", x.Container, x.LimitMilli)
		}
	}
}
