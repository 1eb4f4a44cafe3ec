package fleet

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/demand"
	"github.com/throttlelab/throttlelab/fleet/fleettest"
)

func manifests(t *testing.T) []ManifestContainer {
	t.Helper()
	ms, err := ReadManifests([]string{"testdata/manifests/shop.yaml", "testdata/manifests/batch.yaml", "testdata/manifests/list.json"}, nil, "default")
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func TestReadManifests(t *testing.T) {
	ms := manifests(t)
	var got []string
	for _, m := range ms {
		got = append(got, filepath.Base(m.File)+":"+strconv.Itoa(m.Line)+" "+m.name()+" "+cpu(m.LimitMilli))
	}
	want := []string{
		"shop.yaml:35 shop/deployment/checkout/app 500m",
		"shop.yaml:40 shop/deployment/checkout/envoy 100m",
		"shop.yaml:45 shop/deployment/checkout/envoy-admin 50m",
		"shop.yaml:75 shop/statefulset/db/postgres 1",
		"shop.yaml:96 shop/deployment/search/app 300m",
		"batch.yaml:18 batch/cronjob/report/worker 1",
		"list.json:9 default/pod/debug/shell 100m",
		"list.json:15 monitoring/daemonset/node-exporter/node-exporter -",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("containers:\n%s\nwant (the init container migrate is no sidecar, so not listed):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// stdin and a directory read the same.
	b, _ := os.ReadFile("testdata/manifests/batch.yaml")
	fromStdin, err := ReadManifests([]string{"-"}, bytes.NewReader(b), "default")
	if err != nil || len(fromStdin) != 1 || fromStdin[0].File != "<stdin>" || fromStdin[0].Line != 18 {
		t.Errorf("stdin: %+v %v", fromStdin, err)
	}
	dir, err := ReadManifests([]string{"testdata/manifests"}, nil, "default")
	var me *ManifestError
	if !errors.As(err, &me) || !strings.HasPrefix(me.File, filepath.Join("testdata", "manifests", "bad")) {
		t.Errorf("the directory (with bad/ in it): %d containers, %v: want the first bad file's error", len(dir), err)
	}
}

func TestManifestBadInput(t *testing.T) {
	for _, c := range []struct{ file, says string }{
		{"bad/notk8s.yaml", "bad/notk8s.yaml:2: not a Kubernetes object (no apiVersion or kind)"},
		{"bad/quantity.yaml", `bad/quantity.yaml:10: Pod p container c: limits.cpu: cpu quantity "1.5cores"`},
		{"bad/notyaml.yaml", "bad/notyaml.yaml: not YAML: yaml: line 2"},
		{"missing.yaml", "missing.yaml: cannot read it"},
	} {
		_, err := ReadManifests([]string{filepath.Join("testdata", "manifests", c.file)}, nil, "default")
		var me *ManifestError
		if !errors.As(err, &me) || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want a one-line *ManifestError with %q", c.file, err, c.says)
		}
	}
	if _, err := ParseManifest("empty.yaml", []byte("---\n# nothing\n"), "default"); err == nil {
		t.Error("an empty file passed")
	}
}

// TestCheckWithPrometheus checks the testdata manifests against the
// recorded Prometheus, whose agents (fake, on the real model) answer the
// limits Prometheus holds no prediction for.
func TestCheckWithPrometheus(t *testing.T) {
	ctx := context.Background()
	prom := fleettest.Prometheus(t, fleettest.RecordedAgents(t))
	cs, err := FromPrometheus(ctx, http.DefaultClient, prom.URL, PromOptions{})
	if err != nil {
		t.Fatal(err)
	}
	agents, err := DiscoverAgents(ctx, http.DefaultClient, prom.URL)
	if err != nil || len(agents) != 2 {
		t.Fatalf("agents %v %v", agents, err)
	}
	res, err := Check(ctx, manifests(t), &Measured{Containers: cs, Client: http.DefaultClient, Agents: agents}, Budget{MaxThrottled: 0.05, MaxDelayP99: 40 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteCheck(&b, res, true); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for from, to := range map[string]string{"127.0.0.1:19101": "NODE-A", "127.0.0.1:19102": "NODE-B"} {
		out = strings.ReplaceAll(out, agents["throttlelab-agent/"+from], to)
	}
	goldenFile(t, "check-prometheus.txt", []byte(out))
	if !Violated(res) || len(MissingDemand(res)) == 0 {
		t.Error("the testdata holds violations and unchecked containers")
	}
	// An agent that no longer knows db-0: db-1's exported prediction
	// counts, and the line says one replica was not predicted.
	empty := fleettest.Agent(t, "node-a", nil)
	res2, err := Check(ctx, manifests(t)[3:4], &Measured{Containers: cs, Client: http.DefaultClient, Agent: empty.URL}, Budget{MaxThrottled: 0.05})
	if err != nil || res2[0].Pod != "db-1" || !strings.Contains(res2[0].Source, "exported prediction at=krr; 1 of 2 replicas not predicted: pod db-0: agent at") {
		t.Errorf("one replica unknown to its agent: %+v %v", res2, err)
	}
	// The db's 1 CPU is off the exported limits on db-0: its agent answered.
	for _, o := range res {
		if o.Container == "postgres" && !strings.Contains(o.Source, "/evaluate") && !strings.Contains(o.Source, "exported") {
			t.Errorf("postgres: source %q", o.Source)
		}
	}
}

// TestCheckWithDemand replays recorded CSVs locally, and a limit the
// demand never reaches passes while one under its bursts does not.
func TestCheckWithDemand(t *testing.T) {
	dir := t.TempDir()
	write := func(ns, w, c string, d *advise.Demand) {
		p := filepath.Join(dir, ns, w, c+".csv")
		os.MkdirAll(filepath.Dir(p), 0o755)
		var b bytes.Buffer
		if err := demand.WriteCSV(&b, d); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(p, b.Bytes(), 0o644)
	}
	write("shop", "checkout", "app", fleettest.Bursty(30, 0.1, 1.2, 100*time.Millisecond, 7)) // bursts to 1.2 CPU: 500m throttles
	write("shop", "checkout", "envoy", fleettest.Bursty(30, 0.02, 0.05, 100*time.Millisecond, 8))
	os.MkdirAll(filepath.Join(dir, "shop", "db"), 0o755)
	os.WriteFile(filepath.Join(dir, "shop", "db", "postgres.csv"), []byte("time_ns,usage_ns\n0,0\n10,5\n5,9\n"), 0o644)
	ms := manifests(t)[:3]
	res, err := Check(context.Background(), ms, &Recorded{Dir: dir}, Budget{MaxThrottled: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if len(res[0].Violations) != 1 || !strings.HasPrefix(res[0].Violations[0], "predicted throttled ") || len(res[1].Violations) != 0 || res[1].Skip != "" || !strings.HasPrefix(res[2].Skip, "no recorded demand at ") {
		t.Errorf("outcomes: %+v", res)
	}
	_, err = Check(context.Background(), manifests(t)[3:4], &Recorded{Dir: dir}, Budget{MaxThrottled: 0.05})
	var de *DemandError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "postgres.csv") {
		t.Errorf("a bad CSV: %v, want a *DemandError naming it", err)
	}
}

// TestFromAgent reads a fake agent (real advise evaluations behind the
// contract) and checks a manifest against it.
func TestFromAgent(t *testing.T) {
	ctx := context.Background()
	a := fleettest.Agent(t, "node-a", []fleettest.Container{
		{Namespace: "shop", Pod: "checkout-7d9f8c6b5d-abcde", Container: "app", OwnerKind: "ReplicaSet", OwnerName: "checkout-7d9f8c6b5d", LimitMilli: 500, RequestMilli: 250,
			Demand: fleettest.Bursty(90, 0.1, 1.2, 100*time.Millisecond, 2)},
		{Namespace: "default", Pod: "debug", Container: "shell", LimitMilli: 100},
		// Idle: krr's and the VPA's baselines come out at 1m, a quota the
		// kubelet would not set at a 100 ms period: their predictions are
		// unknown, and the rest of the node's answer still comes.
		{Namespace: "default", Pod: "idle", Container: "sleeper", LimitMilli: 500,
			Demand: fleettest.Bursty(90, 0.0005, 0.0005, 0, 3), KrrMilli: 1},
	})
	cs, err := FromAgent(ctx, http.DefaultClient, a.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Pod == "idle" && (c.KrrMilli >= 10 || c.Krr.Known || !c.Current.Known) {
			t.Errorf("the idle container: krr %dm (known %v), current known %v: want krr under 10m, not predicted, and its current limit predicted", c.KrrMilli, c.Krr.Known, c.Current.Known)
		}
	}
	cs = cs[:2]
	ms := Group(cs)
	if len(ms) != 2 || ms[1].Workload.Kind != "Deployment" {
		t.Fatalf("%+v", ms)
	}
	app := ms[1].Worst
	if !app.Current.Known || !app.Advised.Known || !app.Krr.Known || !app.VPA.Known || app.AdvisedLimitMilli <= 500 || app.Current.ThrottledRatio <= app.Advised.ThrottledRatio {
		t.Errorf("app: %+v: want every prediction, an advice above the 500m that throttles it", app)
	}
	if ms[0].Worst.Reason == "" {
		t.Errorf("the container without demand has no reason: %+v", ms[0].Worst)
	}
	res, err := Check(ctx, manifests(t)[:1], &Measured{Containers: cs, Client: http.DefaultClient, Agent: a.URL}, Budget{MaxThrottled: 0.05})
	if err != nil || len(res[0].Violations) != 1 || res[0].Source != "exported prediction at=current" {
		t.Errorf("check against the agent: %+v %v", res, err)
	}
	m := manifests(t)[0]
	m.LimitMilli = 1700
	res, err = Check(ctx, []ManifestContainer{m}, &Measured{Containers: cs, Client: http.DefaultClient, Agent: a.URL}, Budget{MaxThrottled: 0.05})
	if err != nil || len(res[0].Violations) != 0 || !strings.Contains(res[0].Source, "/evaluate") {
		t.Errorf("1700m (off the grid, above every burst): %+v %v", res, err)
	}
	dead := fleettest.Agent(t, "x", nil)
	dead.Close()
	if _, err := FromAgent(ctx, http.DefaultClient, dead.URL); !errors.Is(err, ErrUnreachable) {
		t.Errorf("a dead agent: %v", err)
	}
}
