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
