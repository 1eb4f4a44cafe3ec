package cli

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/fleet/fleettest"
	"github.com/throttlelab/throttlelab/schemas"
	"github.com/throttlelab/throttlelab/schemas/schematest"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// gunzipTo writes the recorded CSV src (.csv.gz) out plain, for --csv.
func gunzipTo(t *testing.T, src string) string {
	t.Helper()
	fh, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(src), ".gz"))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOutputSchemas holds the real JSON of every command to its schema
// (schemas/*.json): advise on the recorded CSVs, check and check --lint,
// top --once and top's lines on fake trees, advise --prometheus's rows.
// The agent's /advice and /evaluate are held in package agent
// (TestAgentSchemas), from its real handler.
func TestOutputSchemas(t *testing.T) {
	repo := filepath.Join("..", "..")
	run := func(args ...string) []byte {
		t.Helper()
		var out, errb bytes.Buffer
		if code := runRoot(newRootCmd(), args, &out, &errb); code != ExitOK && code != ExitOver {
			t.Fatalf("throttlelab %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
		}
		return out.Bytes()
	}
	csvs := []string{filepath.Join(repo, "advise", "testdata", "two-regime.csv")}
	for _, gz := range []string{"nginx-knee.csv.gz", "jvm-knee.csv.gz", "jvm-start.csv.gz"} {
		csvs = append(csvs, gunzipTo(t, filepath.Join(repo, "advise", "testdata", gz)))
	}
	for _, c := range csvs {
		schematest.Check(t, "advise --csv "+filepath.Base(c), run("advise", "--csv", c, "-o", "json"))
	}
	schematest.Check(t, "advise --all", run("advise", "--csv", csvs[0], "--all", "--max-delay", "20ms", "-o", "json"))

	shop := filepath.Join(repo, "fleet", "testdata", "manifests", "shop.yaml")
	agents := fleettest.RecordedAgents(t)
	prom := fleettest.Prometheus(t, agents)
	schematest.Check(t, "check -o json", run("check", "-o", "json", "--allow-missing-demand", "--prometheus", prom.URL, shop))
	schematest.Check(t, "check --lint -o json (findings)", run("check", "--lint", "-o", "json", filepath.Join(repo, "fleet", "testdata", "lint", "bad.yaml")))
	schematest.Check(t, "check --lint -o json (none)", run("check", "--lint", "-o", "json", filepath.Join(repo, "examples", "limits.yaml")))
	schematest.Check(t, "advise --prometheus -o json", run("advise", "--prometheus", prom.URL, "-o", "json"))

	for _, tree := range watchtest.Trees {
		root := watchtest.FakeRoot(t, tree)
		schematest.Check(t, "top --once -o json "+tree, run("top", "--once", "--interval", "30ms", "--root", root, "-o", "json"))
		// Lines: one document per group per interval, for a few intervals.
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		var out bytes.Buffer
		cmd := newRootCmd()
		cmd.SetArgs([]string{"top", "--interval", "30ms", "--root", root, "-o", "json"})
		cmd.SetOut(&out)
		cmd.SetErr(io.Discard)
		cmd.ExecuteContext(ctx) // ends when ctx does
		cancel()
		sc := bufio.NewScanner(&out)
		sc.Buffer(nil, 1<<20)
		n := 0
		for sc.Scan() {
			schematest.Check(t, "top -o json line "+tree, sc.Bytes())
			n++
		}
		if n == 0 {
			t.Errorf("top -o json %s: no line in 200 ms", tree)
		}
	}
}

// TestAdviseAgentOldNames reads an agent's /advice written with the names
// of the release before (limit_milli, period_usec, start_s, no apiVersion):
// advise --agent gives the same rows as from today's names.
func TestAdviseAgentOldNames(t *testing.T) {
	agent := fleettest.Agent(t, "node-a", []fleettest.Container{{Namespace: "shop", Pod: "web-5c6b7f8d9-xk2p4", Container: "app", OwnerKind: "ReplicaSet", OwnerName: "web-5c6b7f8d9",
		LimitMilli: 500, RequestMilli: 250, Demand: fleettest.Bursty(90, 0.1, 1.2, 100*time.Millisecond, 2)}})
	resp, err := http.Get(agent.URL + "/advice")
	if err != nil {
		t.Fatal(err)
	}
	now, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// Today's names back to the old ones, as an agent of the release before wrote them.
	old := string(now)
	for o, n := range schemas.Renamed {
		old = strings.ReplaceAll(old, `"`+n+`"`, `"`+o+`"`)
	}
	if old == string(now) || !strings.Contains(old, `"limit_milli"`) || !strings.Contains(old, `"start_s"`) {
		t.Fatalf("the old-format document has no old name:\n%.400s", old)
	}
	oldAgent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/advice" {
			io.WriteString(w, old)
			return
		}
		agent.Config.Handler.ServeHTTP(w, r) // /evaluate: today's agent
	}))
	defer oldAgent.Close()
	rows := func(url string) (string, map[string]any) {
		var out, errb bytes.Buffer
		if code := runRoot(newRootCmd(), []string{"advise", "--agent", url, "-o", "json"}, &out, &errb); code != ExitOK {
			t.Fatalf("advise --agent %s: exit %d %s", url, code, errb.String())
		}
		var doc map[string]any
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		return strings.ReplaceAll(out.String(), url, "AGENT"), doc
	}
	want, _ := rows(agent.URL)
	got, doc := rows(oldAgent.URL)
	if got != want {
		t.Errorf("advise --agent on an old agent's /advice:\n%s\nwant as from today's:\n%s", got, want)
	}
	w := doc["workloads"].([]any)[0].(map[string]any)["worst"].(map[string]any)
	if w["limit_millicores"] != 500.0 || w["request_millicores"] != 250.0 || w["advised_limit_millicores"] == nil {
		t.Errorf("old names not read: %v", w)
	}
}
