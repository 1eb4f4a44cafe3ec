package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/demand"
	"github.com/throttlelab/throttlelab/fleet"
	"github.com/throttlelab/throttlelab/fleet/fleettest"
	"github.com/throttlelab/throttlelab/schemas/schematest"
)

// TestCheckCommand runs check as a user would, from fleet's directory so
// that its output is byte for byte fleet's golden check-prometheus.txt:
// exit 1 with one line per violation, 2 for bad input.
func TestCheckCommand(t *testing.T) {
	agents := fleettest.RecordedAgents(t)
	prom := fleettest.Prometheus(t, agents)
	t.Chdir(filepath.Join("..", "..", "fleet"))
	run := func(stdin string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		root := newRootCmd()
		root.SetIn(strings.NewReader(stdin))
		code := runRoot(root, args, &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := run("", "check", "--verbose", "--allow-missing-demand", "--prometheus", prom.URL, "--max-delay", "40ms",
		"testdata/manifests/shop.yaml", "testdata/manifests/batch.yaml", "testdata/manifests/list.json")
	out = strings.ReplaceAll(strings.ReplaceAll(out, agents["127.0.0.1:19101"], "NODE-A"), agents["127.0.0.1:19102"], "NODE-B")
	want, err := os.ReadFile(filepath.Join("testdata", "golden", "check-prometheus.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if code != 1 || out != string(want) || errs != "throttlelab: check: proposed limits over budget (see above)\n" {
		t.Errorf("check: exit %d, stderr %q, stdout:\n%s\nwant exit 1 and fleet/testdata/golden/check-prometheus.txt:\n%s", code, errs, out, want)
	}

	// Within budget from stdin: exit 0 with --allow-missing-demand, which
	// lists the containers without demand as not checked; without it, they
	// are an error (exit 2, one line naming the first).
	shop, _ := os.ReadFile("testdata/manifests/shop.yaml")
	envoyOnly := strings.Replace(string(shop), "cpu: 500m", "cpu: 900m", 1)
	code, out, _ = run(envoyOnly, "check", "--allow-missing-demand", "--prometheus", prom.URL, "--max-throttled", "50%", "-")
	if code != 0 || !strings.Contains(out, "<stdin>:45: shop/deployment/checkout/envoy-admin: not checked: container envoy-admin matches no measured container") {
		t.Errorf("within budget: exit %d:\n%s", code, out)
	}
	code, _, errs = run(envoyOnly, "check", "--prometheus", prom.URL, "--max-throttled", "50%", "-")
	if code != 2 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "<stdin>:45: shop/deployment/checkout/envoy-admin: container envoy-admin matches no measured container") || !strings.Contains(errs, "--allow-missing-demand") {
		t.Errorf("missing demand: exit %d %q: want 2 and one line naming envoy-admin", code, errs)
	}

	// --json: every outcome, the same exit status.
	code, out, _ = run("", "check", "-o", "json", "--allow-missing-demand", "--prometheus", prom.URL, "testdata/manifests/shop.yaml")
	var doc struct{ Containers []fleet.ContainerCheck } // a CheckResult (schemas/checkresult.json)
	err = json.Unmarshal([]byte(out), &doc)
	outcomes := doc.Containers
	if code != 1 || err != nil || len(outcomes) != 5 || len(outcomes[0].Violations) != 1 || outcomes[0].Line != 35 {
		t.Errorf("--json: exit %d, %v, %d outcomes:\n%s", code, err, len(outcomes), out)
	}

	// Recorded demand, replayed here.
	dir := t.TempDir()
	p := filepath.Join(dir, "batch", "report", "worker.csv")
	os.MkdirAll(filepath.Dir(p), 0o755)
	var b bytes.Buffer
	demand.WriteCSV(&b, fleettest.Bursty(30, 0.2, 0.6, 200*time.Millisecond, 9)) // never above 0.72 CPU: 1 CPU never throttles
	os.WriteFile(p, b.Bytes(), 0o644)
	code, out, _ = run("", "check", "--verbose", "--demand", dir, "testdata/manifests/batch.yaml")
	if code != 0 || !strings.Contains(out, "testdata/manifests/batch.yaml:18: batch/cronjob/report/worker: ok at 1: throttled 0.0%, p99 added delay 0.0ms (demand "+p+")\n") {
		t.Errorf("--demand: exit %d:\n%s", code, out)
	}
	// A demand directory without the container's file: exit 2, naming the
	// path tried.
	empty := t.TempDir()
	code, _, errs = run("", "check", "--demand", empty, "testdata/manifests/batch.yaml")
	if want := filepath.Join(empty, "batch", "report", "worker.csv"); code != 2 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "no recorded demand at "+want) {
		t.Errorf("--demand without the file: exit %d %q, want 2 naming %s", code, errs, want)
	}

	// --lint: no demand; file:line findings, exit 1; clean, exit 0.
	code, out, _ = run("", "check", "--lint", "--base", "testdata/lint/base.yaml", "testdata/lint/bad.yaml")
	if code != 1 || !strings.Contains(out, "testdata/lint/bad.yaml:15: shop/deployment/api/over: requests.cpu 500m is above limits.cpu 250m") ||
		!strings.Contains(out, "testdata/lint/bad.yaml:52: shop/deployment/db/postgres: the pod's QoS class changes from Guaranteed to Burstable") {
		t.Errorf("--lint: exit %d:\n%s", code, out)
	}
	if code, out, errs := run("", "check", "--lint", "../examples"); code != 0 || !strings.Contains(out, "0 findings") {
		t.Errorf("--lint examples/: exit %d %s\n%s", code, errs, out)
	}

	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"check", "--prometheus", prom.URL, "testdata/manifests/bad/notk8s.yaml"}, 2, "testdata/manifests/bad/notk8s.yaml:2: not a Kubernetes object"},
		{[]string{"check", "--prometheus", prom.URL, "testdata/manifests/bad/quantity.yaml"}, 2, `limits.cpu: cpu quantity "1.5cores"`},
		{[]string{"check", "testdata/manifests/batch.yaml"}, 2, "give one source of measured demand"},
		{[]string{"check", "--demand", "nodir", "testdata/manifests/batch.yaml"}, 2, "--demand nodir: no such directory"},
		{[]string{"check", "--lint", "--demand", "nodir", "testdata/manifests/batch.yaml"}, 2, "check --lint uses no demand"},
		{[]string{"check", "--base", "testdata/lint/base.yaml", "--demand", "nodir", "testdata/manifests/batch.yaml"}, 2, "--base goes with --lint"},
		{[]string{"check", "--prometheus", "prometheus:9090", "testdata/manifests/batch.yaml"}, 2, "starting with http://"},
		{[]string{"check", "--prometheus", prom.URL, "--max-throttled", "150%", "testdata/manifests/batch.yaml"}, 2, "at most 100%"},
		{[]string{"check", "--prometheus", "http://127.0.0.1:1", "testdata/manifests/batch.yaml"}, 3, "is unreachable"},
		{[]string{"check", "--agent", "http://127.0.0.1:1", "testdata/manifests/batch.yaml"}, 3, "is unreachable"},
		{[]string{"check", "--prometheus", prom.URL}, 2, "give manifests: files, directories, or - for stdin"},
	} {
		code, _, errs := run("", c.args...)
		if code != c.code || !strings.Contains(errs, c.says) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q: want %d and one line with %q", c.args[1:], code, errs, c.code, c.says)
		}
	}
}

// TestAdviseFleetCommand runs advise --prometheus and --agent: the table,
// CSV and patch outputs are fleet's goldens, and bad input is exit 2.
func TestAdviseFleetCommand(t *testing.T) {
	prom := fleettest.Prometheus(t, nil)
	agent := fleettest.Agent(t, "node-a", []fleettest.Container{{Namespace: "shop", Pod: "web-5c6b7f8d9-xk2p4", Container: "app", OwnerKind: "ReplicaSet", OwnerName: "web-5c6b7f8d9",
		LimitMilli: 500, RequestMilli: 250, Demand: fleettest.Bursty(90, 0.1, 1.2, 100*time.Millisecond, 2)}})
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := runRoot(newRootCmd(), args, &out, &errb)
		return code, out.String(), errb.String()
	}
	for _, c := range []struct{ flag, golden string }{{"table", "advise.txt"}, {"csv", "advise.csv"}, {"patch", "advise-patch.sh"}, {"json", "advise.json"}} {
		code, out, errs := run("advise", "--prometheus", prom.URL, "-o", c.flag)
		want, _ := os.ReadFile(filepath.Join("..", "..", "fleet", "testdata", "golden", c.golden))
		if code != 0 || out != string(want) {
			t.Errorf("advise --prometheus -o %s: exit %d %s\n%s\nwant fleet/testdata/golden/%s", c.flag, code, errs, out, c.golden)
		}
	}
	// The agents' target named as advise, check and the agent name it.
	code, out, errs := run("advise", "--prometheus", prom.URL, "--max-throttled", "1%")
	if want, _ := os.ReadFile(filepath.Join("..", "..", "fleet", "testdata", "golden", "advise.txt")); code != 0 || out != string(want) {
		t.Errorf("advise --prometheus --max-throttled 1%%: exit %d %s\n%s\nwant fleet/testdata/golden/advise.txt", code, errs, out)
	}
	code, out, _ = run("advise", "--prometheus", prom.URL, "-n", "shop")
	if code != 0 || strings.Contains(out, "batch") || !strings.Contains(out, "deployment/checkout") {
		t.Errorf("-n shop: exit %d\n%s", code, out)
	}
	code, out, errs = run("advise", "--agent", agent.URL)
	if code != 0 || !strings.Contains(out, "deployment/web") {
		t.Errorf("--agent: exit %d %s\n%s", code, errs, out)
	}
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"advise", "--prometheus", prom.URL, "-o", "yaml"}, 2, `--output "yaml": throttlelab advise writes table, json, csv, patch`},
		{[]string{"advise", "--prometheus", prom.URL, "--agent", agent.URL}, 2, "not both"},
		{[]string{"advise", "--prometheus", prom.URL, "--yes"}, 2, "--yes goes with --apply"},
		{[]string{"advise", "--apply"}, 2, "go with --prometheus or --agent"},
		{[]string{"advise", "--prometheus", prom.URL, "--target-label", "delay=1ms"}, 2, `target "delay=1ms": no such target: the agents advise for throttled=0.01`},
		{[]string{"advise", "--prometheus", prom.URL, "--max-throttled", "2%"}, 2, `target "throttled=0.02": no such target: the agents advise for throttled=0.01`},
		{[]string{"advise", "--prometheus", prom.URL, "--max-throttled", "1%", "--target-label", "throttled=0.01"}, 2, "not both"},
		{[]string{"advise", "--agent", agent.URL, "--max-delay", "10ms"}, 2, "go with --prometheus"},
		{[]string{"advise", "--prometheus", prom.URL, "-n", "nope"}, 3, "no throttlelab_container_info series"},
		{[]string{"advise", "--prometheus", "http://127.0.0.1:1"}, 3, "is unreachable"},
		{[]string{"advise", "--prometheus", prom.URL, "--apply", "--kubeconfig", filepath.Join(t.TempDir(), "none")}, 2, "--apply: loading the kubeconfig"},
	} {
		code, _, errs := run(c.args...)
		if code != c.code || !strings.Contains(errs, c.says) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q: want %d and one line with %q", c.args[1:], code, errs, c.code, c.says)
		}
	}
}

// runRoot is Run on a root command the test made (with its stdin set).
func runRoot(root *cobra.Command, args []string, stdout, stderr io.Writer) int {
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(context.Background()); err != nil {
		fmt.Fprintf(stderr, "throttlelab: %v\n", err)
		return exitCode(err)
	}
	return 0
}

// podDemand writes DIR/shop/web/NAME.csv: cumulative usage at 10 ms from
// time_ns start, at cores(t) over each 10 ms step (deterministic).
func podDemand(t *testing.T, dir, name string, start time.Duration, seconds int, cores func(t time.Duration) float64) {
	t.Helper()
	var b strings.Builder
	b.WriteString("time_ns,usage_ns\n")
	var use time.Duration
	for i := 0; i <= seconds*100; i++ {
		at := time.Duration(i) * 10 * time.Millisecond
		if i > 0 {
			use += time.Duration(cores(at-10*time.Millisecond) * float64(10*time.Millisecond))
		}
		fmt.Fprintf(&b, "%d,%d\n", int64(start+at), int64(use))
	}
	p := filepath.Join(dir, "shop", "web", name+".csv")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// podManifest is a Deployment whose pod has an app and a proxy sidecar
// under a pod-level CPU limit (line 10); appLimit, if set, is the app's own.
func podManifest(t *testing.T, podLimit, appLimit string) string {
	t.Helper()
	app := ""
	if appLimit != "" {
		app = "\n        resources: {requests: {cpu: 100m}, limits: {cpu: " + appLimit + "}}"
	}
	m := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  template:
    spec:
      resources:
        limits: {cpu: "` + podLimit + `"}
      containers:
      - name: app` + app + `
      initContainers:
      - name: proxy
        restartPolicy: Always
      - name: migrate
`
	p := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(p, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCheckPodLevel is issue 52's acceptance: a pod-level 400m over the
// summed demand of an app (0.44 cores on average: 1.5 cores for 30 ms every
// 200 ms, 43/170 core between) and a proxy sidecar (0.2 cores), recorded at
// 10 ms on clocks 5 ms apart, exits 1 naming the pod's limit; the same pod
// at 2 CPUs (the sum never passes 1.7) exits 0. A container limit inside
// the pod's is checked on its own demand; Prometheus, which has no
// pod-level series, says so; a pod-level limit that does not parse is bad
// input.
func TestCheckPodLevel(t *testing.T) {
	dir := t.TempDir()
	const epoch = 1_764_000_000 * time.Second
	podDemand(t, dir, "app", epoch, 60, func(t time.Duration) float64 {
		if t%(200*time.Millisecond) < 30*time.Millisecond {
			return 1.5
		}
		return 43.0 / 170
	})
	podDemand(t, dir, "proxy", epoch+5*time.Millisecond, 60, func(time.Duration) float64 { return 0.2 })
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := runRoot(newRootCmd(), args, &out, &errb)
		return code, out.String(), errb.String()
	}

	m := podManifest(t, "400m", "")
	code, out, errs := run("check", "--demand", dir, m)
	head := m + ":10: shop/deployment/web: pod web (pod-level 400m): predicted throttled "
	if code != 1 || !strings.Contains(out, head) || !strings.Contains(out, "of periods at 400m vs budget 5.0% over app+proxy summed (demand ") ||
		!strings.Contains(out, "pods: 1 checked, 1 over budget, 0 not checked\n") || strings.Count(errs, "\n") != 1 {
		t.Errorf("pod-level 400m: exit %d, stderr %q:\n%s\nwant exit 1 and a line starting %q", code, errs, out, head)
	}
	// Over 60 s the pod asks for 0.64 cores on average, more than 400m
	// gives: the work held back only grows, and after the first periods
	// every one runs out of quota.
	var doc struct{ Pods []fleet.PodCheck }
	_, js, _ := run("check", "-o", "json", "--demand", dir, m)
	if err := json.Unmarshal([]byte(js), &doc); err != nil || len(doc.Pods) != 1 || doc.Pods[0].LimitMilli != 400 ||
		strings.Join(doc.Pods[0].Containers, ",") != "app,proxy" || doc.Pods[0].Prediction.ThrottledRatio < 0.99 {
		t.Errorf("-o json at 400m: %v %+v", err, doc.Pods)
	}
	schematest.Check(t, "check -o json (pod-level)", []byte(js))

	code, out, errs = run("check", "--verbose", "--demand", dir, podManifest(t, "2", ""))
	if code != 0 || !strings.Contains(out, "pod web (pod-level 2): ok at 2 over app+proxy summed: throttled 0.0%") || !strings.Contains(out, "pods: 1 checked, 0 over budget, 0 not checked\n") {
		t.Errorf("pod-level 2: exit %d %s:\n%s\nwant exit 0, throttled 0.0%%", code, errs, out)
	}

	// The app's own 300m inside the pod's 2: the app is over budget on its
	// own demand, the pod is not.
	m = podManifest(t, "2", "300m")
	code, out, _ = run("check", "--demand", dir, m)
	if code != 1 || !strings.Contains(out, m+":13: shop/deployment/web/app: predicted throttled ") || !strings.Contains(out, "pods: 1 checked, 0 over budget") {
		t.Errorf("app limit 300m in pod-level 2: exit %d:\n%s", code, out)
	}

	// Nested: the proxy's own 100m inside a pod-level 600m. Its summed
	// demand (0.64) is over 600m, so the pod's limit alone throttles
	// nearly every period; with the proxy held to 0.1 core by its own
	// quota the pod's pool runs dry only in periods with an app burst
	// (about half of them), as the kernel nests the quotas.
	pod600 := func(proxy string) fleet.PodCheck {
		t.Helper()
		m := podManifest(t, "600m", "")
		if proxy != "" {
			b, _ := os.ReadFile(m)
			b = []byte(strings.Replace(string(b), "restartPolicy: Always", "restartPolicy: Always\n        resources: {limits: {cpu: "+proxy+"}}", 1))
			if err := os.WriteFile(m, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var doc struct{ Pods []fleet.PodCheck }
		_, js, errs := run("check", "-o", "json", "--demand", dir, m)
		if err := json.Unmarshal([]byte(js), &doc); err != nil || len(doc.Pods) != 1 || !doc.Pods[0].Prediction.Known {
			t.Fatalf("pod-level 600m, proxy %q: %v %q %s", proxy, err, errs, js)
		}
		return doc.Pods[0]
	}
	alone, nested := pod600(""), pod600("100m")
	if alone.Prediction.ThrottledRatio < 0.9 || nested.Prediction.ThrottledRatio < 0.2 || nested.Prediction.ThrottledRatio > 0.8 ||
		!strings.Contains(nested.Source, "nested over the containers' own limits proxy 100m") {
		t.Errorf("pod-level 600m: alone throttled %.3f (want >= 0.9), proxy 100m inside %.3f (want 0.2-0.8), source %q",
			alone.Prediction.ThrottledRatio, nested.Prediction.ThrottledRatio, nested.Source)
	}

	// Demand missing for the sidecar: the pod is not checked, exit 2
	// naming where demand was looked for.
	partial := t.TempDir()
	podDemand(t, partial, "app", 0, 5, func(time.Duration) float64 { return 0.1 })
	code, _, errs = run("check", "--demand", partial, podManifest(t, "400m", ""))
	if want := filepath.Join(partial, "shop", "web", "proxy.csv"); code != 2 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "pod-level limit not checked: no recorded demand at "+want) {
		t.Errorf("no proxy demand: exit %d %q, want 2 naming %s", code, errs, want)
	}

	// Prometheus: the agents' series are per container.
	prom := fleettest.Prometheus(t, fleettest.RecordedAgents(t))
	m = podManifest(t, "400m", "")
	code, out, _ = run("check", "--allow-missing-demand", "--prometheus", prom.URL, m)
	if code != 0 || !strings.Contains(out, m+":10: shop/deployment/web: pod web (pod-level 400m): not checked: pod-level limit not checked: Prometheus "+prom.URL+" has no pod-level series\n") {
		t.Errorf("--prometheus, --allow-missing-demand: exit %d:\n%s", code, out)
	}
	code, _, errs = run("check", "--prometheus", prom.URL, m)
	if code != 2 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "has no pod-level series") {
		t.Errorf("--prometheus: exit %d %q, want 2 and one line", code, errs)
	}

	// Bad input: a pod-level limit that does not parse.
	m = podManifest(t, "400mc", "")
	code, _, errs = run("check", "--demand", dir, m)
	if code != 2 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, m+`:10: Deployment web: pod-level resources.limits.cpu: cpu quantity "400mc"`) {
		t.Errorf("pod-level 400mc: exit %d %q, want 2 and one line naming the value", code, errs)
	}
	code, _, errs = run("check", "--lint", m)
	if code != 2 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "pod-level resources.limits.cpu") {
		t.Errorf("--lint, pod-level 400mc: exit %d %q, want 2 and one line", code, errs)
	}
}

// TestCheckLintPodLevel runs check --lint on a pod whose containers'
// requests sum above its pod-level limit: exit 1 with the finding at the
// pod-level limit's line, the JSON held to lintresult.json.
func TestCheckLintPodLevel(t *testing.T) {
	m := podManifest(t, "50m", "300m") // app: request 100m, limit 300m above the pod's 50m
	run := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := runRoot(newRootCmd(), args, &out, &errb)
		return code, out.String()
	}
	code, out := run("check", "--lint", m)
	if code != 1 || !strings.Contains(out, m+":10: shop/deployment/web: container app's limits.cpu 300m is above the pod-level limit 50m") ||
		!strings.Contains(out, m+":10: shop/deployment/web: the pod-level limit 50m is under the containers' requests.cpu summed, 100m") {
		t.Errorf("--lint: exit %d:\n%s", code, out)
	}
	code, out = run("check", "--lint", "-o", "json", m)
	if code != 1 {
		t.Errorf("--lint -o json: exit %d", code)
	}
	schematest.Check(t, "check --lint -o json (pod-level)", []byte(out))
}
