package fleet

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/internal/golden"

	"github.com/throttlelab/throttlelab/fleet/fleettest"
)

// goldenFile compares got with testdata/golden/name (go test -update rewrites it).
func goldenFile(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Compare(t, filepath.Join("testdata", "golden", name), got)
}

func recorded(t *testing.T) []*Merged {
	t.Helper()
	prom := fleettest.Prometheus(t, nil)
	cs, err := FromPrometheus(context.Background(), http.DefaultClient, prom.URL, PromOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return Group(cs)
}

// TestFromPrometheusGroupsByOwner reads the recorded answer of a real
// Prometheus and checks the grouping and the merge of replicas.
func TestFromPrometheusGroupsByOwner(t *testing.T) {
	ms := recorded(t)
	got := map[string]*Merged{}
	for _, m := range ms {
		got[m.Workload.String()+"/"+m.Container] = m
	}
	if len(ms) != 6 {
		for k := range got {
			t.Log(k)
		}
		t.Fatalf("%d workload containers, want 6", len(ms))
	}
	app := got["shop/deployment/checkout/app"]
	if app == nil {
		t.Fatal("no shop/deployment/checkout/app: the ReplicaSet's pod-template-hash was not recognised")
	}
	if app.Replicas != 3 || app.Worst.Pod != "checkout-7d9f8c6b5d-fghij" || app.AdvisedMinMilli != 700 || app.AdvisedMaxMilli != 900 {
		t.Errorf("checkout/app: %d replicas, worst %s, advised %d..%d: want 3, the fghij pod (advised 900m), 700..900",
			app.Replicas, app.Worst.Pod, app.AdvisedMinMilli, app.AdvisedMaxMilli)
	}
	if app.ThrottledMin != 0.121 || app.ThrottledMax != 0.233 || app.Worst.Current.ThrottledRatio != 0.233 || app.Worst.Advised.DelayP99Ms != 3.4 {
		t.Errorf("checkout/app: throttled now %g..%g, worst %+v: want 0.121..0.233 and the fghij pod's predictions", app.ThrottledMin, app.ThrottledMax, app.Worst)
	}
	if app.Worst.VPALimitMilli != 760 {
		t.Errorf("checkout/app: the VPA's limit %dm, want its target 380m times limit/request 2 = 760m", app.Worst.VPALimitMilli)
	}
	if m := got["shop/statefulset/db/postgres"]; m == nil || m.Replicas != 2 || m.Worst.Pod != "db-0" || m.Worst.RequestMilli != 2000 {
		t.Errorf("db/postgres: %+v, want 2 replicas, db-0 (advised 1500m) worst", m)
	}
	if m := got["batch/job/report-29410560/worker"]; m == nil || m.Worst.AdvisedBurstMilli != 1000 || m.Worst.WindowSeconds != 3600 {
		t.Errorf("the Job: %+v", m)
	}
	if m := got["default/pod/debug/shell"]; m == nil || !strings.Contains(m.Worst.Reason, "no samples yet") || m.Worst.Current.Known {
		t.Errorf("the bare pod without samples: %+v, want a reason", m)
	}
	if m := got["monitoring/daemonset/node-exporter/node-exporter"]; m == nil || !strings.Contains(m.Worst.Reason, "no CPU limit") || m.Worst.LimitMilli != 0 {
		t.Errorf("the DaemonSet without a limit: %+v, want a reason", m)
	}
}

func TestOutputsGolden(t *testing.T) {
	ms := recorded(t)
	var b bytes.Buffer
	for _, o := range []struct {
		name  string
		write func() error
	}{
		{"advise.txt", func() error { return WriteTable(&b, ms) }},
		{"advise.csv", func() error { return WriteCSV(&b, ms) }},
		{"advise.json", func() error { return WriteJSON(&b, ms) }},
		{"advise-patch.sh", func() error { return WritePatches(&b, PlanResizes(ms)) }},
	} {
		b.Reset()
		if err := o.write(); err != nil {
			t.Fatal(err)
		}
		goldenFile(t, o.name, b.Bytes())
	}
}

func TestPlanResizes(t *testing.T) {
	rs := PlanResizes(recorded(t))
	by := map[string]*Resize{}
	for _, r := range rs {
		by[r.Pod+"/"+r.Container] = r
	}
	for _, c := range []struct {
		row      string
		to, req  int64
		skipping string
	}{
		{"checkout-7d9f8c6b5d-abcde/app", 900, 0, ""}, // every replica gets the worst one's advice
		{"checkout-7d9f8c6b5d-klmno/app", 900, 0, ""},
		{"db-1/postgres", 1500, 1500, ""}, // request = limit: both move, the QoS class stays
		{"checkout-7d9f8c6b5d-abcde/envoy", 100, 0, ""},
		{"node-exporter-x7k2p/node-exporter", 150, 0, "no CPU limit now"},
		{"debug/shell", 0, 0, "no advice"},
	} {
		r := by[c.row]
		if r == nil {
			t.Errorf("%s: no row", c.row)
			continue
		}
		if r.ToLimitMilli != c.to || r.ToRequestMilli != c.req || !strings.Contains(r.Skip, c.skipping) || (c.skipping == "") != (r.Skip == "") {
			t.Errorf("%s: to %d, request %d, skip %q: want %d, %d, %q", c.row, r.ToLimitMilli, r.ToRequestMilli, r.Skip, c.to, c.req, c.skipping)
		}
	}
}

func TestWorkloadOf(t *testing.T) {
	for _, c := range []struct {
		kind, name, pod string
		want            Workload
	}{
		{"ReplicaSet", "checkout-7d9f8c6b5d", "p", Workload{"ns", "Deployment", "checkout"}},
		{"ReplicaSet", "web-api-5c6b7f8d9", "p", Workload{"ns", "Deployment", "web-api"}},
		{"ReplicaSet", "frontend-v2", "p", Workload{"ns", "ReplicaSet", "frontend-v2"}},   // made by hand
		{"ReplicaSet", "cache-abcdef", "p", Workload{"ns", "ReplicaSet", "cache-abcdef"}}, // vowels: no hash
		{"StatefulSet", "db", "db-0", Workload{"ns", "StatefulSet", "db"}},
		{"", "", "debug", Workload{"ns", "Pod", "debug"}},
	} {
		got := WorkloadOf(&Container{Namespace: "ns", Pod: c.pod, OwnerKind: c.kind, OwnerName: c.name})
		if got != c.want {
			t.Errorf("%s %s: %v, want %v", c.kind, c.name, got, c.want)
		}
	}
}

func TestPrometheusBadInput(t *testing.T) {
	ctx := context.Background()
	prom := fleettest.Prometheus(t, nil)
	dead := fleettest.Prometheus(t, nil)
	dead.Close()
	for _, c := range []struct {
		name, url string
		o         PromOptions
		is        error
		says      string
	}{
		{"unreachable", dead.URL, PromOptions{}, ErrUnreachable, "check the URL"},
		{"returns nothing", prom.URL, PromOptions{Namespace: "nope"}, ErrNoData, "is the throttlelab agent deployed"},
		{"unknown target", prom.URL, PromOptions{Target: "delay=5ms"}, nil, `the agents advise for throttled=0.01`},
		{"not Prometheus", prom.URL + "/nothing", PromOptions{}, ErrUnreachable, "404"},
	} {
		_, err := FromPrometheus(ctx, http.DefaultClient, c.url, c.o)
		if err == nil || (c.is != nil && !errors.Is(err, c.is)) || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q (%v)", c.name, err, c.says, c.is)
		}
	}
	// Prometheus' own error (a query it cannot parse) is passed on.
	_, err := Query(ctx, http.DefaultClient, prom.URL, `{__name__="x"`)
	if err == nil || !strings.Contains(err.Error(), "bad_data") {
		t.Errorf("a bad query: %v, want Prometheus' bad_data", err)
	}
	// Agents advising for two targets: the choice is the user's.
	ss := []Sample{
		{Metric: map[string]string{"__name__": "throttlelab_container_info", "namespace": "a", "pod": "p", "container": "c"}, Value: 1},
		{Metric: map[string]string{"__name__": "throttlelab_advised_cpu_limit_cores", "namespace": "a", "pod": "p", "container": "c", "target": "throttled=0.01"}, Value: 1},
		{Metric: map[string]string{"__name__": "throttlelab_advised_cpu_limit_cores", "namespace": "a", "pod": "p", "container": "c", "target": "delay=10ms"}, Value: 2},
	}
	if _, err := fromSamples(ss, "P", PromOptions{}); !errors.Is(err, ErrTargets) || !strings.Contains(err.Error(), "delay=10ms, throttled=0.01") {
		t.Errorf("two targets: %v, want ErrTargets naming both", err)
	}
	// A series outside the contract (top's pod-level peak) makes no row.
	ss = append(ss, Sample{Metric: map[string]string{"__name__": "throttlelab_cpu_peak_period_cores", "namespace": "a", "pod": "p", "container": "", "basis": "period"}, Value: 3})
	// Scraped without honor_labels: the container's labels are exported_*.
	ss = append(ss, Sample{Metric: map[string]string{"__name__": "throttlelab_container_cpu_limit_cores", "namespace": "throttlelab", "pod": "agent-x", "container": "agent",
		"exported_namespace": "a", "exported_pod": "p", "exported_container": "c"}, Value: 0.5})
	cs, err := fromSamples(ss, "P", PromOptions{Target: "delay=10ms"})
	if err == nil && (len(cs) != 1 || cs[0].LimitMilli != 500) {
		t.Errorf("exported_* labels: %+v, want them read as the container's", cs)
	}
	if err != nil || cs[0].AdvisedLimitMilli != 2000 {
		t.Errorf("--target delay=10ms: %v %+v, want that target's 2 CPUs", err, cs)
	}
}

// TestContractNamesMatchTheQuery: the names fromSamples reads are exactly
// those the one query asks Prometheus for.
func TestContractNamesMatchTheQuery(t *testing.T) {
	re := regexp.MustCompile("^(?:" + seriesRegex + ")$")
	for name := range contract {
		if !re.MatchString(name) {
			t.Errorf("%s is read but not queried", name)
		}
	}
	// Every name the regex can match is one of the contract's: expand its
	// alternatives by hand.
	n := 0
	for _, a := range []string{"container_info", "container_cpu_limit_cores", "container_cpu_request_cores", "container_cpu_burst_cores",
		"advised_cpu_limit_cores", "advised_cpu_burst_cores", "predicted_throttled_ratio", "predicted_delay_p99_seconds",
		"krr_cpu_cores", "vpa_cpu_target_cores", "demand_window_seconds", "demand_stationary", "startup_throttled_ratio", "runtime_info", "runtime_parallelism"} {
		if !contract["throttlelab_"+a] || !re.MatchString("throttlelab_"+a) {
			t.Errorf("throttlelab_%s: read %v", a, contract["throttlelab_"+a])
		}
		n++
	}
	if n != len(contract) {
		t.Errorf("%d names expanded, %d read", n, len(contract))
	}
}

// TestNotStationaryNoted: an agent that judged a container's demand to have
// changed within its window (throttlelab_demand_stationary 0) gets a note in
// the table; one that judged it stationary gets none; a container whose
// start-up the agent kept apart gets its throttled share at the advised
// limit noted.
func TestNotStationaryNoted(t *testing.T) {
	row := func(pod string, stationary float64) []Sample {
		l := func(name string, v float64) Sample {
			return Sample{Metric: map[string]string{"__name__": name, "namespace": "a", "pod": pod, "container": "c", "owner_kind": "Deployment", "owner_name": pod}, Value: v}
		}
		return []Sample{l("throttlelab_container_info", 1), l("throttlelab_container_cpu_limit_cores", 0.5),
			l("throttlelab_advised_cpu_limit_cores", 0.8), l("throttlelab_demand_window_seconds", 3600), l("throttlelab_demand_stationary", stationary)}
	}
	started := Sample{Metric: map[string]string{"__name__": "throttlelab_startup_throttled_ratio", "namespace": "a", "pod": "steady", "container": "c", "at": "advised"}, Value: 0.25}
	cs, err := fromSamples(append(append(row("changed", 0), row("steady", 1)...), started), "P", PromOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteTable(&b, Group(cs)); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		noted := strings.Contains(line, "demand changed within the window")
		if strings.Contains(line, "deployment/changed") != noted {
			t.Errorf("table line %q: noted %v", line, noted)
		}
		if strings.Contains(line, "deployment/steady") != strings.Contains(line, "start-up (kept apart) 25.0% throttled at the advised limit") {
			t.Errorf("table line %q: the start-up's throttled share at the advised limit", line)
		}
	}
}
