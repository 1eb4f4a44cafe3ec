package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/internal/golden"

	"github.com/throttlelab/throttlelab/agent"
	"github.com/throttlelab/throttlelab/testenv"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

const dashboardFile = "grafana/throttlelab.json"

// TestDashboardCommitted checks that the committed dashboard is the
// generator's output (go test ./deploy -run DashboardCommitted -update).
func TestDashboardCommitted(t *testing.T) {
	got, err := DashboardJSON()
	if err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, dashboardFile, got)
	want, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := Queries(want)
	if err != nil || len(qs) < 10 {
		t.Fatalf("%d queries in the dashboard, err %v", len(qs), err)
	}
}

// demandNode writes a bursty container's counters into the v2 fake tree
// (its one container has a 200m limit): every 10 ms step a burst of two
// threads may run; a period whose work passes the quota is throttled.
type demandNode struct {
	file                                             string
	step                                             int
	usageUs, periods, throttled, throttledUs, workUs int64
}

const pod4 = "sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podabcdef01_2345_4678_9abc_def012345678.slice/cri-containerd-d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4.scope/cpu.stat"

func (n *demandNode) advance() error {
	n.step++
	w := int64(500)
	if n.step%13 < 3 {
		w = 20000 // two threads for 10 ms
	}
	n.usageUs += w
	n.workUs += w
	if n.step%10 == 0 {
		n.periods++
		if n.workUs > 20000 { // quota 20 ms per 100 ms period
			n.throttled++
			n.throttledUs += (n.workUs - 20000)
		}
		n.workUs = 0
	}
	s := fmt.Sprintf("usage_usec %d\nuser_usec %d\nsystem_usec 0\nnr_periods %d\nnr_throttled %d\nthrottled_usec %d\nnr_bursts 0\nburst_usec 0\n",
		n.usageUs, n.usageUs, n.periods, n.throttled, n.throttledUs)
	return os.WriteFile(n.file, []byte(s), 0o644)
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestDashboardQueriesOnPrometheus runs every panel query of the committed
// dashboard against a real Prometheus that scrapes a real agent (on a fake
// node whose container's counters the test moves, ten times faster than
// real time): no panel may come back empty.
func TestDashboardQueriesOnPrometheus(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		testenv.Unavailable(t, "prometheus is not installed (apt-get install prometheus)")
	}
	root := watchtest.FakeRoot(t, "v2-kubepods-systemd")
	a, err := agent.New(agent.Config{Root: root, Node: "node-1", MaxMilli: 2000,
		Summary: agent.SummaryConfig{Window: 10 * time.Minute, Block: 10 * time.Second, Chunk: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	drive := make(chan error, 1)
	driven := make(chan struct{})
	// The driver must be done with the agent before a.Close (deferred above)
	// closes its groups.
	defer func() { cancel(); <-driven }()
	go func() {
		defer close(driven)
		n := &demandNode{file: filepath.Join(root, pod4)}
		tick := time.NewTicker(time.Millisecond) // one 10 ms step per ms
		defer tick.Stop()
		for at := time.Duration(0); ; {
			select {
			case <-ctx.Done():
				drive <- nil
				return
			case <-tick.C:
			}
			if err := n.advance(); err != nil {
				drive <- err
				return
			}
			at += 10 * time.Millisecond
			a.Sample(at)
			if n.step%100 == 0 {
				if err := a.Report(at); err != nil {
					drive <- err
					return
				}
				a.Drain()
			}
		}
	}()

	dir := t.TempDir()
	port := freePort(t)
	u, _ := url.Parse(srv.URL)
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n- job_name: throttlelab-agent\n  static_configs:\n  - targets: ['%s']\n", u.Host)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port))
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	api := fmt.Sprintf("http://127.0.0.1:%d", port)

	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := Queries(b)
	if err != nil {
		t.Fatal(err)
	}
	empty := map[string]bool{}
	for _, q := range qs {
		empty[Resolve(q, "10s")] = true
	}
	deadline := time.Now().Add(90 * time.Second)
	for len(empty) > 0 && time.Now().Before(deadline) {
		select {
		case err := <-drive:
			t.Fatalf("driving the fake node: %v", err)
		case <-time.After(time.Second):
		}
		for q := range empty {
			n, err := resultCount(api, q)
			if err != nil {
				continue // not up yet
			}
			if n > 0 {
				delete(empty, q)
			}
		}
	}
	for q := range empty {
		t.Errorf("empty after 90 s: %s", q)
	}
	if t.Failed() {
		t.Logf("prometheus:\n%s", logs.String())
	}
}

// resultCount runs an instant query and returns how many series it gave.
func resultCount(api, q string) (int, error) {
	resp, err := http.Get(api + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, err
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("%s: %s", q, r.Error)
	}
	return len(r.Data.Result), nil
}
