package agent

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/schemas/schematest"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// countingFile counts the reads of a counter file.
type countingFile struct {
	cgroup.CounterFile
	n *atomic.Int64
}

func (f countingFile) Read() ([]byte, error) {
	f.n.Add(1)
	return f.CounterFile.Read()
}

const (
	v2PodDir = "sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podabcdef01_2345_4678_9abc_def012345678.slice"
	v2PodCtr = v2PodDir + "/cri-containerd-d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4.scope"
	v1PodDir = "sys/fs/cgroup/cpu,cpuacct/kubepods/besteffort/pod0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
)

// podNode runs a fake node for 6 s, counting the reads of the files in
// the pod's directory podDir (not its containers').
func podNode(t *testing.T, tree, podDir string, edit func(root string)) (*fakeNode, int64) {
	var reads atomic.Int64
	n := newFakeNodeWith(t, tree, edit, func(root string, cfg *Config) {
		dir := filepath.Join(root, podDir)
		cfg.open = func(p string, size int) (cgroup.CounterFile, error) {
			f, err := cgroup.OpenCounterFile(p, size)
			if err != nil || filepath.Dir(p) != dir {
				return f, err
			}
			return countingFile{f, &reads}, nil
		}
	})
	n.run(6 * time.Second)
	return n, reads.Load()
}

func write(t *testing.T, root, rel, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, rel), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A pod whose quota is its containers' (the kubelet's, without pod-level
// resources) is not summarised and not read at every sample; one whose
// container has no limit under the pod's quota (a pod-level limit) is, on
// v2 and v1, with advice, a pod-level series (container "") and its
// predictions.
func TestAgentPodLevelLimit(t *testing.T) {
	n, plain := podNode(t, "v2-kubepods-systemd", v2PodDir, nil)
	for _, v := range n.a.Views() {
		if v.Kind == KindPod {
			t.Fatalf("a pod whose quota is its container's is summarised: %+v", v.Names)
		}
	}
	// 600 samples, 6 reports: read at its first sample and at reports
	if plain > 20 {
		t.Errorf("the pod's files were read %d times in 600 samples without a pod-level limit, want at most 20 (reports only)", plain)
	}

	cases := []struct {
		tree, podDir string
		edit         func(root string)
		want         int64 // the pod's limit in millicores
	}{
		{"v2-kubepods-systemd", v2PodDir, func(root string) { write(t, root, v2PodCtr+"/cpu.max", "max 100000\n") }, 200},
		{"v1-joined-kubepods-cgroupfs", v1PodDir, func(root string) { write(t, root, v1PodDir+"/cpu.cfs_quota_us", "50000\n") }, 500},
	}
	for _, tc := range cases {
		t.Run(tc.tree, func(t *testing.T) {
			n, reads := podNode(t, tc.tree, tc.podDir, tc.edit)
			var pod *View
			for _, v := range n.a.Views() {
				if v.Kind == KindPod {
					pod = v
				}
			}
			if pod == nil {
				t.Fatal("no pod entry for a pod-level limit")
			}
			if pod.Container != "" || pod.Pod == "" || !strings.HasSuffix(pod.Cgroup, filepath.Base(tc.podDir)) {
				t.Errorf("pod entry named %+v, want container \"\" and the pod's cgroup", pod.Names)
			}
			if pod.LimitMilli != tc.want {
				t.Errorf("pod limit %d m, want %d", pod.LimitMilli, tc.want)
			}
			if pod.Advice == nil || pod.Advice.Recommendation.LimitMilli <= 0 {
				t.Fatalf("pod: no advice: %s", pod.Why)
			}
			t.Logf("pod files read %d times with a pod-level limit, %d without, in 600 samples", reads, plain)
			if reads <= 2*plain {
				t.Errorf("the pod's files were read %d times with a pod-level limit, %d without: not sampled", reads, plain)
			}
			_, metrics := get(t, n.a.Handler(), "/metrics")
			// the prediction, the audit against the pod cgroup's own
			// counts, and cAdvisor's pod-level counters
			for _, name := range []string{"throttlelab_predicted_throttled_ratio{", "throttlelab_container_prediction_error_ratio{", "container_cpu_cfs_throttled_periods_total{"} {
				found := false
				for _, line := range strings.Split(metrics, "\n") {
					// top's series name the pod by its cgroup (id): their pod
					// label is the kubelet's name only, empty for the v1
					// tree's pod that its logs do not name
					who := `pod="` + pod.Pod + `"`
					if strings.HasPrefix(name, "container_") {
						who = `id="` + pod.Cgroup + `"`
					}
					if strings.HasPrefix(line, name) && strings.Contains(line, `container=""`) && strings.Contains(line, who) {
						found = true
					}
				}
				if !found {
					t.Errorf(`/metrics has no pod-level %s...} (container="")`, name)
				}
			}
		})
	}
}

// The /advice with a pod entry (kind "pod", container "") holds to its
// schema, and /evaluate answers for the pod (container "").
func TestAgentPodSchema(t *testing.T) {
	n, _ := podNode(t, "v2-kubepods-systemd", v2PodDir, func(root string) { write(t, root, v2PodCtr+"/cpu.max", "max 100000\n") })
	h := n.a.Handler()
	code, body := get(t, h, "/advice")
	if code != 200 {
		t.Fatalf("/advice: %d %s", code, body)
	}
	if !regexp.MustCompile(`"kind": *"pod"`).MatchString(body) {
		t.Fatalf("/advice has no pod entry: %s", body)
	}
	schematest.Check(t, "/advice with a pod", []byte(body))
	var pod *View
	for _, v := range n.a.Views() {
		if v.Kind == KindPod {
			pod = v
		}
	}
	code, body = get(t, h, "/evaluate?namespace="+pod.Namespace+"&pod="+pod.Pod+"&container=&limit=300m")
	if code != 200 {
		t.Fatalf("/evaluate for the pod: %d %s", code, body)
	}
	schematest.Check(t, "/evaluate for a pod", []byte(body))
}

// Run picks a pod with a pod-level limit at a report, not at the next
// walk of the whole tree (watch.FullDiscover, a minute away where inotify
// works): its entry is there within seconds.
func TestAgentRunPicksAPodSoon(t *testing.T) {
	root := watchtest.FakeRoot(t, "v2-kubepods-systemd")
	write(t, root, v2PodCtr+"/cpu.max", "max 100000\n")
	a, err := New(Config{Root: root, Node: "node-1", MaxMilli: 2000, Interval: 200 * time.Millisecond,
		Summary: SummaryConfig{Window: 20 * time.Second, Block: 5 * time.Second, Chunk: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	for {
		select {
		case err := <-done:
			t.Fatalf("Run ended (%v) before the pod's entry came", err)
		case <-tick.C:
		}
		for _, v := range a.Views() {
			if v.Kind == KindPod {
				t.Logf("the pod's entry after %.1f s", time.Since(start).Seconds())
				cancel()
				<-done
				return
			}
		}
	}
}

// A pod whose limit stops being pod-level (its container given the pod's
// quota: the sum again) is dropped, its summary with it; back to a
// pod-level limit, it is summarised again.
func TestAgentPodLimitChanges(t *testing.T) {
	n, _ := podNode(t, "v2-kubepods-systemd", v2PodDir, func(root string) { write(t, root, v2PodCtr+"/cpu.max", "max 100000\n") })
	has := func() bool {
		for _, v := range n.a.Views() {
			if v.Kind == KindPod {
				return true
			}
		}
		return false
	}
	if !has() {
		t.Fatal("no pod entry with a pod-level limit")
	}
	write(t, n.root, v2PodCtr+"/cpu.max", "20000 100000\n")
	n.run(3 * time.Second)
	if has() {
		t.Error("the pod's entry is kept after its container's limit became the pod's quota")
	}
	write(t, n.root, v2PodCtr+"/cpu.max", "max 100000\n")
	n.run(3 * time.Second)
	if !has() {
		t.Error("no pod entry once the pod-level limit is back")
	}
}
