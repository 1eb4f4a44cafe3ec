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

	"github.com/throttlelab/throttlelab/advise/source"
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
	code, out, errs := run("", "check", "-v", "--prometheus", prom.URL, "--max-delay-p99", "40ms",
		"testdata/manifests/shop.yaml", "testdata/manifests/batch.yaml", "testdata/manifests/list.json")
	out = strings.ReplaceAll(strings.ReplaceAll(out, agents["127.0.0.1:19101"], "NODE-A"), agents["127.0.0.1:19102"], "NODE-B")
	want, err := os.ReadFile(filepath.Join("testdata", "golden", "check-prometheus.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if code != 1 || out != string(want) || errs != "throttlelab: check: proposed limits over budget (see above)\n" {
		t.Errorf("check: exit %d, stderr %q, stdout:\n%s\nwant exit 1 and fleet/testdata/golden/check-prometheus.txt:\n%s", code, errs, out, want)
	}

	// Within budget from stdin: exit 0, and --strict fails on the
	// container that matches nothing.
	shop, _ := os.ReadFile("testdata/manifests/shop.yaml")
	envoyOnly := strings.Replace(string(shop), "cpu: 500m", "cpu: 900m", 1)
	code, out, _ = run(envoyOnly, "check", "--prometheus", prom.URL, "--max-throttled", "50%", "-")
	if code != 0 || !strings.Contains(out, "<stdin>:45: shop/deployment/checkout/envoy-admin: not checked: container envoy-admin matches no measured container") {
		t.Errorf("within budget: exit %d:\n%s", code, out)
	}
	code, _, errs = run(envoyOnly, "check", "--prometheus", prom.URL, "--max-throttled", "50%", "--strict", "-")
	if code != 1 || !strings.Contains(errs, "--strict") {
		t.Errorf("--strict: exit %d %q", code, errs)
	}

	// --json: every outcome, the same exit status.
	code, out, _ = run("", "check", "--json", "--prometheus", prom.URL, "testdata/manifests/shop.yaml")
	var outcomes []fleet.Outcome
	if err := json.Unmarshal([]byte(out), &outcomes); code != 1 || err != nil || len(outcomes) != 5 || len(outcomes[0].Violations) != 1 || outcomes[0].Line != 35 {
		t.Errorf("--json: exit %d, %v, %d outcomes:\n%s", code, err, len(outcomes), out)
	}

	// Recorded demand, replayed here.
	dir := t.TempDir()
	p := filepath.Join(dir, "batch", "report", "worker.csv")
	os.MkdirAll(filepath.Dir(p), 0o755)
	var b bytes.Buffer
	source.WriteCSV(&b, fleettest.Bursty(30, 0.2, 0.6, 200*time.Millisecond, 9)) // never above 0.72 CPU: 1 CPU never throttles
	os.WriteFile(p, b.Bytes(), 0o644)
	code, out, _ = run("", "check", "-v", "--demand", dir, "testdata/manifests/batch.yaml")
	if code != 0 || !strings.Contains(out, "testdata/manifests/batch.yaml:18: batch/cronjob/report/worker: ok at 1: throttled 0.0%") {
		t.Errorf("--demand: exit %d:\n%s", code, out)
	}

	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"check", "--prometheus", prom.URL, "testdata/manifests/bad/notk8s.yaml"}, 2, "testdata/manifests/bad/notk8s.yaml:2: not a Kubernetes object"},
		{[]string{"check", "--prometheus", prom.URL, "testdata/manifests/bad/quantity.yaml"}, 2, `limits.cpu: cpu quantity "1.5cores"`},
		{[]string{"check", "testdata/manifests/batch.yaml"}, 2, "give one source of measured demand"},
		{[]string{"check", "--prometheus", "prometheus:9090", "testdata/manifests/batch.yaml"}, 2, "starting with http://"},
		{[]string{"check", "--prometheus", prom.URL, "--max-throttled", "150%", "testdata/manifests/batch.yaml"}, 2, "at most 100%"},
		{[]string{"check", "--prometheus", "http://127.0.0.1:1", "testdata/manifests/batch.yaml"}, 1, "is unreachable"},
		{[]string{"check", "--agent", "http://127.0.0.1:1", "testdata/manifests/batch.yaml"}, 1, "is unreachable"},
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
	code, out, _ := run("advise", "--prometheus", prom.URL, "-n", "shop")
	if code != 0 || strings.Contains(out, "batch") || !strings.Contains(out, "deployment/checkout") {
		t.Errorf("-n shop: exit %d\n%s", code, out)
	}
	code, out, errs := run("advise", "--agent", agent.URL)
	if code != 0 || !strings.Contains(out, "deployment/web") {
		t.Errorf("--agent: exit %d %s\n%s", code, errs, out)
	}
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"advise", "--prometheus", prom.URL, "-o", "yaml"}, 2, `--output "yaml": give table, json, csv or patch`},
		{[]string{"advise", "--prometheus", prom.URL, "--agent", agent.URL}, 2, "not both"},
		{[]string{"advise", "--prometheus", prom.URL, "--yes"}, 2, "--yes goes with --apply"},
		{[]string{"advise", "--apply"}, 2, "go with --prometheus or --agent"},
		{[]string{"advise", "--prometheus", prom.URL, "--target", "delay=1ms"}, 1, `--target "delay=1ms": the agents advise for throttled=0.01`},
		{[]string{"advise", "--prometheus", prom.URL, "-n", "nope"}, 1, "no throttlelab_container_info series"},
		{[]string{"advise", "--prometheus", "http://127.0.0.1:1"}, 1, "is unreachable"},
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
