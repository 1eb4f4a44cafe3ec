package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/schemas"
	"github.com/throttlelab/throttlelab/watch"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// fakeNode drives an agent on a fake tree: every group's usage counter
// moves by a demand of its own at each 10 ms step.
type fakeNode struct {
	t     *testing.T
	root  string
	files []counter
	a     *Agent
	at    time.Duration
	step  int
}

type counter struct {
	path  string
	v2    bool // cpu.stat's usage_usec, else cpuacct.usage (ns)
	rest  string
	usage time.Duration
	seed  int
	// frozen: its usage does not move (an idle group)
	frozen bool
}

func newFakeNode(t *testing.T, tree string, edit func(root string)) *fakeNode {
	return newFakeNodeWith(t, tree, edit, nil)
}

// newFakeNodeWith is newFakeNode with the agent's Config changed by set
// (given the fake root) before New.
func newFakeNodeWith(t *testing.T, tree string, edit func(root string), set func(root string, cfg *Config)) *fakeNode {
	root := watchtest.FakeRoot(t, tree)
	if edit != nil {
		edit(root)
	}
	n := &fakeNode{t: t, root: root}
	n.scan()
	cfg := Config{Root: root, Node: "node-1", MaxMilli: 2000,
		Summary: SummaryConfig{Window: 20 * time.Second, Block: 5 * time.Second, Chunk: time.Second},
		Targets: []NamedTarget{{"throttled=0.01", advise.Target{MaxThrottled: 0.01}}, {"delay=10ms", advise.Target{MaxDelay: 10 * time.Millisecond}}}}
	if set != nil {
		set(root, &cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	n.a = a
	return n
}

var usageLine = regexp.MustCompile(`(?m)^usage_usec \d+\n`)

// scan finds the counter files under the cgroup mounts.
func (n *fakeNode) scan() {
	n.files = nil
	filepath.WalkDir(filepath.Join(n.root, "sys/fs/cgroup"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		switch d.Name() {
		case "cpu.stat":
			b, _ := os.ReadFile(p)
			if usageLine.Match(b) {
				n.files = append(n.files, counter{path: p, v2: true, rest: usageLine.ReplaceAllString(string(b), ""), seed: len(n.files)})
			}
		case "cpuacct.usage":
			n.files = append(n.files, counter{path: p, seed: len(n.files)})
		}
		return nil
	})
}

// run advances the node by d in 10 ms steps, reporting every second.
func (n *fakeNode) run(d time.Duration) {
	for end := n.at + d; n.at < end; {
		n.at += 10 * time.Millisecond
		n.step++
		for i := range n.files {
			f := &n.files[i]
			if f.frozen {
				continue
			}
			// a 30 ms burst of two threads every 70+seed*10 ms, over a trickle
			if n.step%(7+f.seed) < 3 {
				f.usage += 20 * time.Millisecond
			}
			f.usage += 100 * time.Microsecond
			var b string
			if f.v2 {
				b = fmt.Sprintf("usage_usec %d\n%s", f.usage/time.Microsecond, f.rest)
			} else {
				b = fmt.Sprintf("%d\n", f.usage)
			}
			if err := os.WriteFile(f.path, []byte(b), 0o644); err != nil && !os.IsNotExist(err) {
				n.t.Fatal(err)
			}
		}
		n.a.Sample(n.at)
		if n.step%100 == 0 {
			if err := n.a.Report(n.at); err != nil {
				n.t.Fatal(err)
			}
			n.a.Drain()
		}
	}
}

func get(t *testing.T, h http.Handler, url string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", url, nil))
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, string(b)
}

func adviceOf(t *testing.T, h http.Handler) AdviceDoc {
	t.Helper()
	code, body := get(t, h, "/advice")
	if code != 200 {
		t.Fatalf("/advice: %d %s", code, body)
	}
	var doc AdviceDoc
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestAgentFakeTrees(t *testing.T) {
	want := map[string][]string{ // containers' namespace/pod/container
		"v1-split": {"//throttlelab/limits-4242/limited-0"},
		// the pod 0a1b... is not in the kubelet's log directories: named by
		// UID and ID; the container 5a5a... of the named pod shop/cart-7d9f
		// has no log link: the pod's sandbox, left out
		"v1-joined-kubepods-cgroupfs": {"/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d/c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2",
			"kube-system/coredns-abc/coredns", "shop/cart-7d9f/cart"},
		"v2-kubepods-systemd": {"web/api-0/api"},
		"hybrid-v2-cpu":       {"//throttlelab/f01-logjam-19473/r001-limited-0", "//throttlelab/f01-logjam-19473/r001-limited-1"},
	}
	for _, tree := range watchtest.Trees {
		t.Run(tree, func(t *testing.T) {
			n := newFakeNode(t, tree, nil)
			n.run(4 * time.Second)
			h := n.a.Handler()
			doc := adviceOf(t, h)
			// /advice is written a container at a time: the same document
			// as the views encoded at once.
			whole, _ := json.Marshal(AdviceDoc{APIVersion: schemas.APIVersion, Kind: schemas.KindAgentAdvice, Node: "node-1", Containers: n.a.Views()})
			streamed, _ := json.Marshal(doc)
			if string(whole) != string(streamed) {
				t.Errorf("/advice differs from the views encoded at once:\n%s\n%s", streamed, whole)
			}
			var got []string
			for _, c := range doc.Containers {
				got = append(got, c.Namespace+"/"+c.Pod+"/"+c.Container)
				if c.Advice == nil {
					t.Errorf("%s: no advice: %s", c.Cgroup, c.Why)
					continue
				}
				if c.WindowSeconds < 1.5 || c.WindowSeconds > 4 {
					t.Errorf("%s: window %.1f s after 4 s of samples", c.Cgroup, c.WindowSeconds)
				}
				if c.Advice.Recommendation.LimitMilli <= 0 {
					t.Errorf("%s: advised limit %d", c.Cgroup, c.Advice.Recommendation.LimitMilli)
				}
			}
			if strings.Join(got, " ") != strings.Join(want[tree], " ") {
				t.Fatalf("containers %q, want %q", got, want[tree])
			}
			code, metrics := get(t, h, "/metrics")
			if code != 200 {
				t.Fatalf("/metrics: %d", code)
			}
			for _, m := range []string{"throttlelab_container_info{", "throttlelab_advised_cpu_limit_cores{", `target="delay=10ms"`,
				`throttlelab_predicted_throttled_ratio{`, `at="advised"`, "throttlelab_demand_window_seconds{", "throttlelab_demand_stationary{", "container_cpu_usage_seconds_total{",
				`node="node-1"`} {
				if !strings.Contains(metrics, m) {
					t.Errorf("/metrics has no %s", m)
				}
			}
			// The stall's split, per container where there is cpu.pressure
			// (every tree but the pure v1 one), and not top's copy of it.
			hasStall := strings.Contains(metrics, `throttlelab_container_cpu_stall_seconds_total{cause="quota"`) &&
				strings.Contains(metrics, `throttlelab_container_cpu_stall_seconds_total{cause="contention"`)
			if want := tree != "v1-joined-kubepods-cgroupfs"; hasStall != want {
				t.Errorf("/metrics has the stall's split by cause: %v, want %v", hasStall, want)
			}
			if strings.Contains(metrics, "throttlelab_cpu_stall_seconds_total{") {
				t.Error("/metrics has top's throttlelab_cpu_stall_seconds_total beside the agent's own")
			}
		})
	}
}

func TestAgentContainersComeAndGo(t *testing.T) {
	n := newFakeNode(t, "v1-joined-kubepods-cgroupfs", nil)
	n.run(3 * time.Second)
	if got := len(adviceOf(t, n.a.Handler()).Containers); got != 3 {
		t.Fatalf("%d containers, want 3 (the sandbox left out)", got)
	}
	// the BestEffort pod goes: its cgroup directories are removed.
	gone := filepath.Join(n.root, "sys/fs/cgroup/cpu,cpuacct/kubepods/besteffort/pod0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d")
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	n.run(2 * time.Second)
	doc := adviceOf(t, n.a.Handler())
	for _, c := range doc.Containers {
		if strings.Contains(c.Cgroup, "pod0a1b2c3d") {
			t.Fatalf("the removed pod's container is still served: %+v", c.Names)
		}
	}
	if len(doc.Containers) != 2 {
		t.Fatalf("%d containers after one went, want 2", len(doc.Containers))
	}
}

func TestAgentNoKubeletLogs(t *testing.T) {
	n := newFakeNode(t, "v2-kubepods-systemd", func(root string) { os.RemoveAll(filepath.Join(root, "var/log")) })
	n.run(3 * time.Second)
	doc := adviceOf(t, n.a.Handler())
	if len(doc.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(doc.Containers))
	}
	c := doc.Containers[0]
	if c.Namespace != "" || c.Pod != "abcdef01-2345-4678-9abc-def012345678" || !strings.HasPrefix(c.Container, "d4d4d4") || !strings.Contains(c.Cgroup, "kubepods") {
		t.Fatalf("names without the kubelet's logs: %+v, want the pod UID and container ID from the cgroup path", c.Names)
	}
	if c.Advice == nil {
		t.Fatalf("no advice: %s", c.Why)
	}
	// with the pod list of the Kubernetes API (--owners), the names come
	// from it instead, as soon as the watcher's next discovery
	id := strings.Repeat("d4", 32)
	n.a.cfg.Owners = func(context.Context) (Pods, error) {
		names := watch.NewPodNames()
		pod := watch.PodName{Namespace: "shop", Name: "cart-0"}
		names.Add("ABCDEF01-2345-4678-9ABC-DEF012345678", pod, map[string]string{id: "cart"})
		return Pods{Owners: map[watch.PodName]Owner{pod: {"StatefulSet", "cart"}}, Names: names}, nil
	}
	n.a.lookupOwners(context.Background())
	n.run(2 * time.Second)
	c = adviceOf(t, n.a.Handler()).Containers[0]
	if c.Namespace != "shop" || c.Pod != "cart-0" || c.Container != "cart" || c.OwnerKind != "StatefulSet" || c.OwnerName != "cart" {
		t.Fatalf("names from the API: %+v, want shop/cart-0/cart of StatefulSet cart", c.Names)
	}
	if c.Advice == nil || c.WindowSeconds < 3 {
		t.Fatalf("named again, the container kept its summary? window %.1f s, advice %v", c.WindowSeconds, c.Advice != nil)
	}
}

func TestAgentEvaluateEndpoint(t *testing.T) {
	n := newFakeNode(t, "v2-kubepods-systemd", nil)
	h := n.a.Handler()
	if code, body := get(t, h, "/evaluate?namespace=web&pod=api-0&container=api&limit=500m"); code != 404 && code != 503 {
		t.Fatalf("before any sample: %d %s", code, body)
	}
	n.run(3 * time.Second)
	code, body := get(t, h, "/evaluate?namespace=web&pod=api-0&container=api&limit=500m&burst=0")
	if code != 200 {
		t.Fatalf("/evaluate: %d %s", code, body)
	}
	var e advise.Evaluation
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatal(err)
	}
	if e.LimitMilli != 500 || e.Periods <= 0 {
		t.Fatalf("evaluation %+v", e)
	}
	// the fake demand peaks at 2 cores for 30 ms: 150m must throttle more than 1500m
	lo, _ := n.a.Evaluate("web", "api-0", "api", 150, 0)
	hi, _ := n.a.Evaluate("web", "api-0", "api", 1500, 0)
	if !(lo.ThrottledRatio > hi.ThrottledRatio) {
		t.Fatalf("throttled at 150m %.3f, at 1500m %.3f: a smaller limit must throttle more", lo.ThrottledRatio, hi.ThrottledRatio)
	}
	for _, tt := range []struct {
		url  string
		code int
		msg  string
	}{
		{"/evaluate?namespace=web&pod=api-0&container=nope&limit=500m", 404, "no such container"},
		{"/evaluate?namespace=web&pod=api-0&container=api&limit=lots", 400, "limit"},
		{"/evaluate?namespace=web&pod=api-0&container=api", 400, "limit"},
		{"/evaluate?namespace=web&pod=api-0&container=api&limit=500m&burst=600m", 400, "burst"},
	} {
		code, body := get(t, h, tt.url)
		if code != tt.code || !strings.Contains(body, tt.msg) {
			t.Errorf("%s: %d %s, want %d with %q", tt.url, code, body, tt.code, tt.msg)
		}
	}
}

// TestAgentNoCPUController runs the agent on a v2 node whose cpu controller
// is not enabled: usage is still counted, so the containers get advice, but
// no limit, throttling or "current" prediction is served.
func TestAgentNoCPUController(t *testing.T) {
	n := newFakeNode(t, "v2-kubepods-systemd", func(root string) {
		if err := os.WriteFile(filepath.Join(root, "sys/fs/cgroup/cgroup.controllers"), []byte("cpuset io memory pids\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if n.a.Source().Limits() {
		t.Fatal("the source has the cpu controller: the tree edit did not take")
	}
	n.run(3 * time.Second)
	h := n.a.Handler()
	doc := adviceOf(t, h)
	if len(doc.Containers) != 1 || doc.Containers[0].Advice == nil {
		t.Fatalf("containers %+v: want web/api-0/api with advice", doc.Containers)
	}
	if c := doc.Containers[0]; c.LimitMilli != 0 || c.Pod != "api-0" {
		t.Fatalf("without the cpu controller: %+v", c)
	}
	_, metrics := get(t, h, "/metrics")
	for _, absent := range []string{"throttlelab_container_cpu_limit_cores{", `at="current"`, "container_cpu_cfs_throttled_periods_total{"} {
		if strings.Contains(metrics, absent) {
			t.Errorf("/metrics has %s without a cpu controller", absent)
		}
	}
	for _, present := range []string{"container_cpu_usage_seconds_total{", `at="advised"`, "throttlelab_advised_cpu_limit_cores{"} {
		if !strings.Contains(metrics, present) {
			t.Errorf("/metrics has no %s", present)
		}
	}
}

// TestAgentCheckpoint saves the summaries, starts a new agent on the same
// node from them, and checks that the window it serves holds the demand of
// both runs; a checkpoint of another configuration is ignored.
func TestAgentCheckpoint(t *testing.T) {
	dir := t.TempDir()
	n := newFakeNode(t, "v2-kubepods-systemd", nil)
	n.run(4 * time.Second)
	before := adviceOf(t, n.a.Handler()).Containers[0].WindowSeconds
	if err := n.a.SaveState(dir); err != nil {
		t.Fatal(err)
	}
	// the agent restarts: a new one, the node's counters and clock go on
	a, err := New(Config{Root: n.root, Node: "node-1", MaxMilli: 2000,
		Summary: SummaryConfig{Window: 20 * time.Second, Block: 5 * time.Second, Chunk: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if got, err := a.LoadState(dir); err != nil || got != 1 {
		t.Fatalf("loaded %d summaries, err %v; want 1", got, err)
	}
	n.a = a
	n.run(3 * time.Second)
	after := adviceOf(t, a.Handler()).Containers[0].WindowSeconds
	if after < before+0.5 { // without the restore: only what came since (under 2 s)
		t.Fatalf("window %.1f s after the restart, %.1f s before: the saved demand was not restored", after, before)
	}
	// another window: the checkpoint does not fit, and is left alone
	other, err := New(Config{Root: n.root, Summary: SummaryConfig{Window: 40 * time.Second, Block: 5 * time.Second, Chunk: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if got, err := other.LoadState(dir); err != nil || got != 0 {
		t.Fatalf("a checkpoint of another window: loaded %d, err %v", got, err)
	}
	if got := other.CheckpointErrors()[CheckpointRefused]; got != 1 {
		t.Fatalf("a checkpoint of another window counted %d times as refused, want 1", got)
	}
}

// takeAwayBestEffort moves the fake tree's BestEffort pod (one the
// kubelet's log directories do not name) out of it, as if not made yet, and
// returns what puts it back; the agent's watcher is told either way.
func (n *fakeNode) takeAwayBestEffort() (back func()) {
	n.t.Helper()
	pod := filepath.Join(n.root, "sys/fs/cgroup/cpu,cpuacct/kubepods/besteffort/pod0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d")
	staged := filepath.Join(n.root, "staged")
	move := func(from, to string) {
		if err := os.Rename(from, to); err != nil {
			n.t.Fatal(err)
		}
		if err := n.a.w.Discover(); err != nil { // as Run does on a directory's event
			n.t.Fatal(err)
		}
		n.scan()
	}
	move(pod, staged)
	return func() { move(staged, pod) }
}

// checkNewStartup checks /advice: the BestEffort pod's container (new) has a
// start-up of about 2 s, the others (old: why they have none) have none.
func checkNewStartup(t *testing.T, doc AdviceDoc, new, old string) {
	t.Helper()
	seen := 0
	for _, c := range doc.Containers {
		isNew := strings.Contains(c.Cgroup, "pod0a1b2c3d")
		if isNew {
			seen++
		}
		switch {
		case isNew && (c.Startup == nil || c.Startup.Seconds < 1.5):
			t.Errorf("the container %s: start-up %+v, want about 2 s", new, c.Startup)
		case !isNew && c.Startup != nil:
			t.Errorf("%s %s: start-up %+v", c.Cgroup, old, c.Startup)
		}
	}
	if seen != 1 || len(doc.Containers) != 3 {
		t.Fatalf("%d containers in /advice, %d of them new; want 3 and 1", len(doc.Containers), seen)
	}
}

// TestAgentStartupBeforeTheFirstReport: a container found between the
// agent's first sample and its first report (the watcher finds it when
// its directory is made) is starting too.
func TestAgentStartupBeforeTheFirstReport(t *testing.T) {
	n := newFakeNode(t, "v1-joined-kubepods-cgroupfs", nil)
	n.a.cfg.Startup = 2 * time.Second
	back := n.takeAwayBestEffort()
	n.run(300 * time.Millisecond) // no report yet
	back()
	n.run(4 * time.Second)
	checkNewStartup(t, adviceOf(t, n.a.Handler()), "found before the first report", "was there at the first sample")
}

// TestAgentStartupOfANewContainer: a container that appears while the agent
// runs is summarised from its first sample after top finds it, its first
// Config.Startup kept apart (View.Startup); those the agent found running
// have no start-up.
func TestAgentStartupOfANewContainer(t *testing.T) {
	n := newFakeNode(t, "v1-joined-kubepods-cgroupfs", nil)
	n.a.cfg.Startup = 2 * time.Second
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
	// the new pod's counters start from zero, the others' go on
	old := map[string]time.Duration{}
	for _, f := range n.files {
		old[f.path] = f.usage
	}
	n.scan()
	for i := range n.files {
		n.files[i].usage = old[n.files[i].path]
	}
	n.run(6 * time.Second)
	doc := adviceOf(t, n.a.Handler())
	if len(doc.Containers) != 3 {
		t.Fatalf("%d containers, want 3", len(doc.Containers))
	}
	// the start-up's series: the new container's only (it has no limit:
	// at the advised limit only)
	_, metrics := get(t, n.a.Handler(), "/metrics")
	var startup []string
	for _, l := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(l, "throttlelab_startup_throttled_ratio{") {
			startup = append(startup, l)
		}
	}
	if len(startup) != 1 || !strings.Contains(startup[0], `at="advised"`) || !strings.Contains(startup[0], `pod="0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"`) {
		t.Errorf("start-up series: %q, want one, at the advised limit, for the new container", startup)
	}
	for _, c := range doc.Containers {
		isNew := strings.Contains(c.Cgroup, "pod0a1b2c3d")
		t.Logf("%s: window %.1f s, startup %+v", c.Cgroup, c.WindowSeconds, c.Startup)
		switch {
		case isNew && (c.Startup == nil || c.Startup.Seconds < 1.5 || c.Startup.Seconds > 2.5):
			t.Errorf("the new container's start-up: %+v, want about 2 s", c.Startup)
		case isNew && c.WindowSeconds > 4:
			t.Errorf("the new container's window holds %.1f s: the start-up is in it", c.WindowSeconds)
		case isNew && c.Startup.Seconds+c.WindowSeconds < 3.9:
			// found at the report 1 s after it appeared, sampled from then
			// (not from the next report), less the open chunk (up to one:
			// every chunk ends on the node's second, sampling by need)
			t.Errorf("the new container's start-up and window hold %.1f s of the 6 s since it appeared", c.Startup.Seconds+c.WindowSeconds)
		case isNew && (c.Startup.AtAdvised == nil || c.Startup.MeanCores <= 0):
			t.Errorf("the new container's start-up has no figures at the advised limit: %+v", c.Startup)
		case !isNew && c.Startup != nil:
			t.Errorf("%s was running when the agent started: start-up %+v", c.Cgroup, c.Startup)
		}
	}
}

// ownersNode runs an agent on the fake tree root (a report every second)
// whose owner look-ups (shortened: 100 ms to settle, 300 ms apart) give
// pod's names once posted is set. made changes the tree after the first
// look-up; the test fails unless another look-up comes within 30 s (the
// minute's is further) and /advice then holds want.
func ownersNode(t *testing.T, root, uid string, pod watch.PodName, containers map[string]string, made func(), want, what string) {
	t.Helper()
	lookups := make(chan struct{}, 16)
	var posted atomic.Bool
	owners := func(context.Context) (Pods, error) {
		names := watch.NewPodNames()
		if posted.Load() {
			names.Add(uid, pod, containers)
		}
		lookups <- struct{}{}
		return Pods{Owners: map[watch.PodName]Owner{}, Names: names}, nil
	}
	a, err := New(Config{Root: root, Node: "node-1", Owners: owners, Interval: time.Second,
		Summary: SummaryConfig{Window: 20 * time.Second, Block: 5 * time.Second, Chunk: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	a.settle, a.gap = 100*time.Millisecond, 300*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-lookups // at start
	posted.Store(true)
	made()
	select {
	case <-lookups:
	case <-time.After(30 * time.Second):
		t.Fatalf("no look-up within 30 s of %s: it waits for the minute's", what)
	}
	// the names reach the watcher at its next report (every second here)
	for {
		_, body := get(t, a.Handler(), "/advice")
		if strings.Contains(body, want) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no %s in /advice for %s: %s", want, what, body)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestAgentNamesANewPodSoon: a container whose pod the names do not know
// yet (its cgroup is made before the kubelet posts its status) is named by
// a look-up soon after it is found, not at the minute's.
func TestAgentNamesANewPodSoon(t *testing.T) {
	root := watchtest.FakeRoot(t, "v1-joined-kubepods-cgroupfs")
	// the BestEffort pod, which the kubelet's log directories do not name,
	// is made while the agent runs
	const uid = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	const c2 = "c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2"
	pod := filepath.Join(root, "sys/fs/cgroup/cpu,cpuacct/kubepods/besteffort/pod"+uid)
	staged := filepath.Join(root, "staged")
	if err := os.Rename(pod, staged); err != nil {
		t.Fatal(err)
	}
	ownersNode(t, root, uid, watch.PodName{Namespace: "batch", Name: "report-1"}, map[string]string{c2: "render"}, func() {
		if err := os.Rename(staged, pod); err != nil {
			t.Fatal(err)
		}
	}, `"pod": "report-1"`, "a container the names did not know")
}

// TestAgentNamesARestartedContainerSoon: a restarted container has a new ID,
// which the names know once the kubelet posts it: until then top takes it for
// its pod's sandbox (a container of a named pod that has no name), which the
// agent does not summarise. Its appearance asks for a look-up as an unnamed
// container's does.
func TestAgentNamesARestartedContainerSoon(t *testing.T) {
	root := watchtest.FakeRoot(t, "v1-joined-kubepods-cgroupfs")
	const uid = "1f2e3d4c-5b6a-4789-8abc-def012345678"
	const c1 = "c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1"
	const c7 = "c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7"
	pod := filepath.Join(root, "sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/pod"+uid)
	staged := filepath.Join(root, "staged")
	if err := os.CopyFS(staged, os.DirFS(filepath.Join(pod, c1))); err != nil {
		t.Fatal(err)
	}
	// every container named at the start (the unnamed BestEffort pod's
	// would ask for a look-up of its own)
	if err := os.RemoveAll(filepath.Join(root, "sys/fs/cgroup/cpu,cpuacct/kubepods/besteffort/pod0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d")); err != nil {
		t.Fatal(err)
	}
	ownersNode(t, root, uid, watch.PodName{Namespace: "shop", Name: "cart-7d9f"}, map[string]string{c7: "cart"}, func() {
		if err := os.Rename(staged, filepath.Join(pod, c7)); err != nil { // the restart
			t.Fatal(err)
		}
	}, c7, "a restarted container")
}

// TestAgentStartupAfterARestart: a container that appeared while the agent
// was down (not in its checkpoint) is starting when the agent comes back;
// those in the checkpoint are not.
func TestAgentStartupAfterARestart(t *testing.T) {
	dir := t.TempDir()
	n := newFakeNode(t, "v1-joined-kubepods-cgroupfs", nil)
	back := n.takeAwayBestEffort()
	n.run(3 * time.Second)
	if err := n.a.SaveState(dir); err != nil {
		t.Fatal(err)
	}
	// down; the pod comes meanwhile; the agent comes back from its checkpoint
	a, err := New(Config{Root: n.root, Node: "node-1", MaxMilli: 2000, Startup: 2 * time.Second,
		Summary: SummaryConfig{Window: 20 * time.Second, Block: 5 * time.Second, Chunk: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if got, err := a.LoadState(dir); err != nil || got != 2 {
		t.Fatalf("loaded %d summaries, err %v; want 2", got, err)
	}
	n.a = a
	back()
	n.run(4 * time.Second)
	checkNewStartup(t, adviceOf(t, a.Handler()), "that came while the agent was down", "was in the checkpoint")
}

// TestAgentOwnMetrics: the agent's metrics of itself count its samples and
// the sampling instants a late sample skipped, its containers, whether new
// ones are watched for, and its owner look-ups; its process's CPU and memory
// are there for the dashboard's agents row.
func TestAgentOwnMetrics(t *testing.T) {
	n := newFakeNode(t, "v2-kubepods-systemd", nil)
	n.run(2 * time.Second) // 200 samples (the clock counts late ones: Run's, not Sample's)
	fails := true
	n.a.cfg.Owners = func(context.Context) (Pods, error) {
		if fails {
			return Pods{}, fmt.Errorf("pods is forbidden")
		}
		return Pods{}, nil
	}
	n.a.lookupOwners(context.Background())
	fails = false
	n.a.lookupOwners(context.Background())
	n.a.lookupOwners(context.Background())
	_, metrics := get(t, n.a.Handler(), "/metrics")
	for _, want := range []string{
		`throttlelab_agent_info{node="node-1"} 1`,
		"throttlelab_agent_containers 1",
		"throttlelab_agent_samples_total 200",
		"throttlelab_agent_samples_missed_total 0",
		"throttlelab_agent_hot_containers 1", // its bursts reach the lowest limit its advice can pick
		"throttlelab_agent_hot_capped_containers 0",
		"throttlelab_agent_read_errors_total 0",
		"throttlelab_agent_unreadable_containers 0",
		"throttlelab_agent_new_containers_watched 1",
		`throttlelab_agent_owner_lookups_total{result="ok"} 2`,
		`throttlelab_agent_owner_lookups_total{result="failed"} 1`,
		"process_cpu_seconds_total ",
		"process_resident_memory_bytes ",
		"go_goroutines ",
	} {
		if !strings.Contains(metrics, want+"\n") && !strings.Contains(metrics, "\n"+want) {
			t.Errorf("/metrics has no %q", want)
		}
	}
}

// TestAgentAdviceOncePerFold: /advice and /metrics between two folds are
// served what the last fold computed (no view is evaluated again), and the
// next fold changes the answer.
func TestAgentAdviceOncePerFold(t *testing.T) {
	n := newFakeNode(t, "v2-kubepods-systemd", nil)
	n.run(4 * time.Second)
	h := n.a.Handler()
	_, first := get(t, h, "/advice")
	computed := n.a.evaluations.Load()
	if computed == 0 {
		t.Fatal("no view was computed for /advice")
	}
	_, second := get(t, h, "/advice")
	if code, _ := get(t, h, "/metrics"); code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	if got := n.a.evaluations.Load(); got != computed {
		t.Errorf("%d views computed by a second /advice and a /metrics between folds, want none", got-computed)
	}
	if first != second {
		t.Errorf("/advice changed between folds:\n%s\n%s", first, second)
	}
	n.run(time.Second) // one more chunk replayed and folded
	before := n.a.evaluations.Load()
	doc := adviceOf(t, h)
	if got := n.a.evaluations.Load() - before; got != int64(len(doc.Containers)) {
		t.Errorf("%d views computed after a fold for %d containers, want one each", got, len(doc.Containers))
	}
	var old AdviceDoc
	if err := json.Unmarshal([]byte(first), &old); err != nil {
		t.Fatal(err)
	}
	if len(old.Containers) != 1 || len(doc.Containers) != 1 || doc.Containers[0].WindowSeconds <= old.Containers[0].WindowSeconds {
		t.Errorf("the fold did not move /advice's window: %d containers then %d", len(old.Containers), len(doc.Containers))
	}
}

// TestAgentViewsWhileUpdating: a report renaming a container (Update) while
// the metrics or /advice list the containers (eachContainer, under Views
// and /advice): every listing names the
// container by one of its two names, and under -race the two meet without
// a data race (eachContainer read a container's identity without its lock,
// which TestRealAgentPerCPU's race detector once caught).
func TestAgentViewsWhileUpdating(t *testing.T) {
	n := newFakeNode(t, "v2-kubepods-systemd", nil)
	n.run(2 * time.Second)
	n.a.mu.Lock()
	var st watch.Stats
	for p, c := range n.a.containers {
		c.mu.Lock()
		st = watch.Stats{Path: p, Identity: c.id, LimitCores: c.last.LimitCores, RequestCores: c.last.RequestCores}
		c.mu.Unlock()
	}
	n.a.mu.Unlock()
	if st.Path == "" {
		t.Fatal("no container on the fake node")
	}
	names := [2]string{st.Identity.Container, st.Identity.Container + "-renamed"}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 {
			s := st
			s.Identity.Container = names[i%2]
			n.a.Update([]watch.Stats{s}, n.at)
		}
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		err := n.a.eachContainer(func(_ *container, _ map[watch.PodName]Owner, v Names) error {
			if v.Container != names[0] && v.Container != names[1] {
				return fmt.Errorf("a view names container %q, want %q or %q", v.Container, names[0], names[1])
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range n.a.Views() {
		if v.Container != names[1] {
			t.Fatalf("after the last report the view names container %q, want %q", v.Container, names[1])
		}
	}
}

// TestAgentKeepsSummaryOverErrorRows: a report whose row for a container
// has an error (a read that failed while the group was there) keeps its
// summary, however many come in a row (UnreadableAfter of them count it as
// unreadable), a row without an error starts the count over, and only a
// report that no longer lists the group drops it.
func TestAgentKeepsSummaryOverErrorRows(t *testing.T) {
	n := newFakeNode(t, "v1-joined-kubepods-cgroupfs", nil)
	n.run(3*time.Second + 500*time.Millisecond) // half an interval: Report has rows
	rows := n.a.w.Report()
	var path string
	for _, st := range rows {
		if st.Error == "" && n.a.cfg.Select(st.Identity) {
			path = st.Path
			break
		}
	}
	n.a.mu.Lock()
	c := n.a.containers[path]
	count := len(n.a.containers)
	n.a.mu.Unlock()
	if c == nil {
		t.Fatalf("no container at %q", path)
	}
	c.mu.Lock()
	span, _ := c.sum.Span()
	c.mu.Unlock()
	if span <= 0 {
		t.Fatal("the container's summary holds no demand: the test shows nothing")
	}
	with := func(err string) []watch.Stats {
		out := append([]watch.Stats(nil), rows...)
		for i := range out {
			if out[i].Path == path {
				out[i] = watch.Stats{Path: path, Identity: out[i].Identity, Error: err}
			}
		}
		return out
	}
	check := func(when string, errReports int, unreadable int64) {
		t.Helper()
		n.a.mu.Lock()
		got, now := n.a.containers[path], len(n.a.containers)
		n.a.mu.Unlock()
		if got != c || now != count {
			t.Fatalf("%s: the container is %p (was %p), %d containers (were %d): its summary was dropped", when, got, c, now, count)
		}
		c.mu.Lock()
		s, _ := c.sum.Span()
		e := c.errReports
		c.mu.Unlock()
		if s != span {
			t.Errorf("%s: the summary holds %s, held %s", when, s, span)
		}
		if e != errReports || n.a.unreadable.Load() != unreadable {
			t.Errorf("%s: %d error reports in a row, %d unreadable; want %d and %d", when, e, n.a.unreadable.Load(), errReports, unreadable)
		}
	}
	busy := with("reading /sys/fs/cgroup/cpuacct.usage: device or resource busy")
	n.a.Update(busy, n.at)
	check("after one report with an error", 1, 0)
	for i := 1; i < UnreadableAfter; i++ {
		n.a.Update(busy, n.at)
	}
	check(fmt.Sprintf("after %d reports with an error", UnreadableAfter), UnreadableAfter, 1)
	n.a.Update(rows, n.at)
	check("after a report that read it", 0, 0)
	var gone []watch.Stats
	for _, st := range rows {
		if st.Path != path {
			gone = append(gone, st)
		}
	}
	n.a.Update(gone, n.at)
	n.a.mu.Lock()
	_, still := n.a.containers[path]
	n.a.mu.Unlock()
	if still {
		t.Error("a report that no longer lists the group kept its container")
	}
}
