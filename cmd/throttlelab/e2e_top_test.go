package main

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/testenv"

	"github.com/prometheus/common/expfmt"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/watch"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

func TestTopOnceFindsLimitedGroup(t *testing.T) {
	g := cgrouptest.LimitedGroup(t, 20000, 100000)
	watchtest.Start(t, watchtest.WithUsage(t, g), true)
	r := run(t, "top", "--once", "-o", "json", "--interval", "1500ms")
	if r.code != 0 {
		t.Fatalf("top --once --json: exit %d: %s", r.code, r.stderr)
	}
	var doc struct{ Items []watch.Stats } // a GroupStatsList (schemas/groupstatslist.json)
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("top --once -o json printed no GroupStatsList: %v\n%s", err, r.stdout)
	}
	stats := doc.Items
	path := watchtest.CgroupPath(t, g.Dir)
	var got *watch.Stats
	for i := range stats {
		if stats[i].Name == path { // a group nobody claims is named by its path
			got = &stats[i]
		}
	}
	if got == nil {
		t.Fatalf("%s is not among the %d groups printed", path, len(stats))
	}
	if got.LimitCores == nil || *got.LimitCores != 0.2 || got.ThrottledPeriods == 0 || got.UsageCores == nil || *got.UsageCores <= 0 || got.PeakPeriodCores == nil {
		t.Errorf("the spinning 0.2-CPU group: %+v", got)
	}
	// The raw JSON has the fields, with null where nothing applies.
	var rawDoc struct{ Items []map[string]any }
	if err := json.Unmarshal([]byte(r.stdout), &rawDoc); err != nil || len(rawDoc.Items) == 0 {
		t.Fatalf("top --once -o json printed no groups (%v):\n%s", err, r.stdout)
	}
	raw := rawDoc.Items
	for _, k := range []string{"path", "name", "group_kind", "limit_cores", "burst_cores", "request_cores", "usage_cores", "peak_period_cores", "throttled_periods_ratio", "throttled_seconds_per_second", "pressure_some_avg10"} {
		if _, ok := raw[0][k]; !ok {
			t.Errorf("JSON field %s missing", k)
		}
	}
}

func TestTopOnFakeTree(t *testing.T) {
	root := watchtest.FakeRoot(t, "v1-joined-kubepods-cgroupfs")
	r := run(t, "top", "--root", root, "--once", "--tree", "--sort", "name", "--interval", "50ms")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 13 || !strings.Contains(lines[0], "11 groups, cgroup v1 (v1)") || !strings.HasPrefix(lines[1], "NAME") {
		t.Fatalf("table:\n%s", r.stdout)
	}
	for _, want := range []string{"kube-system/coredns-abc/coredns", "shop/cart-7d9f/cart", "kubepods/besteffort"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("no %s in\n%s", want, r.stdout)
		}
	}
	// JSON lines: one object per group per interval, until stopped.
	cmd := exec.Command(binary, "top", "--root", root, "-o", "json", "--interval", "30ms", "--filter", "coredns")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	n := 0
	for n < 4 && sc.Scan() {
		var s watch.Stats
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil || !strings.Contains(s.Name, "coredns") {
			t.Errorf("line %d: %v %q", n, err, sc.Text())
		}
		n++
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil || n != 4 {
		t.Errorf("JSON lines: %d lines, exit %v", n, err)
	}
}

func TestTopBadInput(t *testing.T) {
	root := watchtest.FakeRoot(t, "v2-kubepods-systemd")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	empty := t.TempDir()
	os.MkdirAll(empty+"/proc/self", 0o755)
	os.WriteFile(empty+"/proc/self/mountinfo", []byte("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"), 0o644)
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--interval", "5ms"}, 2, "--interval 5ms"},
		{[]string{"--sample", "1ms"}, 2, "--sample 1ms"},
		{[]string{"--sort", "cpu"}, 2, "want one of name, kind"},
		{[]string{"--weight-mapping", "cubic"}, 2, "linear or quadratic"},
		{[]string{"--listen", busy.Addr().String()}, 2, "--listen " + busy.Addr().String()},
		{[]string{"--root", empty}, 1, "no cgroup filesystem"},
		{[]string{"extra"}, 2, "takes 0 argument"},
	}
	for _, tt := range tests {
		r := run(t, append([]string{"top", "--once", "--root", root}, tt.args...)...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != tt.code || len(lines) != 1 || !strings.Contains(r.stderr, tt.msg) {
			t.Errorf("top %v: exit %d, stderr %q; want exit %d and one line with %q", tt.args, r.code, r.stderr, tt.code, tt.msg)
		}
	}
}

func TestTopMetricsEndpoint(t *testing.T) {
	root := watchtest.FakeRoot(t, "v2-kubepods-systemd")
	cmd := exec.Command(binary, "top", "--root", root, "--listen", "127.0.0.1:0", "--interval", "50ms")
	errOut, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line, err := bufio.NewReader(errOut).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "serving metrics on ")
	if err != nil || !ok {
		t.Fatalf("top --listen said %q, %v", line, err)
	}
	// The first report comes after one interval, the first peak over 100 ms
	// windows after two: scrape until they are there.
	var fams map[string]int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, body, err := httpGet(url)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %v %v", url, resp, err)
		}
		var p expfmt.TextParser
		mf, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
		if err != nil {
			t.Fatalf("not the text format: %v", err)
		}
		fams = map[string]int{}
		for name, f := range mf {
			fams[name] = len(f.Metric)
		}
		if fams["throttlelab_cpu_peak_period_cores"] > 0 {
			break
		}
	}
	// 9 groups, one of them limited (and the docker scope): CFS counters
	// for the two with a quota, usage and peaks for all.
	want := map[string]int{"container_cpu_usage_seconds_total": 9, "container_cpu_cfs_throttled_periods_total": 3,
		"throttlelab_cpu_peak_period_cores": 9, "throttlelab_cpu_usage_cores": 9, "container_pressure_cpu_waiting_seconds_total": 9}
	for name, n := range want {
		if fams[name] != n {
			t.Errorf("%s: %d series, want %d (all: %v)", name, fams[name], n, fams)
		}
	}
}

// TestTopInteractive drives the screen in a real terminal (tmux), on a fake
// tree, as a user would: it shows the groups, / filters, t makes a tree, s
// sorts, q quits.
func TestTopInteractive(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		testenv.Unavailable(t, "tmux is not installed (apt-get install tmux; .ci/run installs it)")
	}
	root := watchtest.FakeRoot(t, "v2-kubepods-systemd")
	sock := filepath.Join(t.TempDir(), "tmux.sock") // a server of its own, its socket removed after
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	tmux("new-session", "-d", "-x", "130", "-y", "20", binary+" top --root "+root+" --interval 100ms --sort name")
	t.Cleanup(func() { exec.Command("tmux", "-S", sock, "kill-server").Run() })
	screen := func(want func(string) bool, what string) string {
		t.Helper()
		var s string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if s = tmux("capture-pane", "-p"); want(s) {
				return s
			}
		}
		t.Fatalf("the screen never showed %s:\n%s", what, s)
		return s
	}
	has := func(subs ...string) func(string) bool {
		return func(s string) bool {
			for _, x := range subs {
				if !strings.Contains(s, x) {
					return false
				}
			}
			return true
		}
	}
	screen(has("throttlelab top", "9 groups", "web/api-0/api", "containerd.service", "NAME↑"), "the groups sorted by name")
	tmux("send-keys", "-l", "/api")
	tmux("send-keys", "Enter")
	s := screen(has("filter: api", "2 groups"), "the filter")
	if strings.Contains(s, "containerd.service") {
		t.Errorf("filtered on api, still shows containerd:\n%s", s)
	}
	tmux("send-keys", "-l", "t")
	screen(has("tree", "5 groups", "        web/api-0/api"), "the tree with the filter's ancestors")
	tmux("send-keys", "Escape")
	tmux("send-keys", "-l", "sp")
	screen(has("sort kind", "PAUSED", "9 groups"), "sort by kind, paused")
	tmux("send-keys", "-l", "q")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if exec.Command("tmux", "-S", sock, "has-session").Run() != nil {
			break // the program quit and its session closed
		}
		if time.Now().After(deadline) {
			t.Fatalf("q did not quit:\n%s", tmux("capture-pane", "-p"))
		}
	}
}

// BenchmarkTopOnce runs `top --once --json` over the host with 32 groups
// made for it (and the host's own) and reports the CPU the whole process took
// (getrusage: user + system) as a share of one core over its wall time,
// start-up, discovery and output included.
func BenchmarkTopOnce(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("real cgroups need root")
	}
	m, err := cgroup.NewManager("/", "bench-once-"+strconv.Itoa(os.Getpid()), false)
	if err != nil {
		b.Skipf("cannot manage cgroups here: %v", err)
	}
	b.Cleanup(func() { m.Cleanup(true) })
	for i := 0; i < 32; i++ {
		if _, err := m.NewGroup("g"+strconv.Itoa(i), cgroup.Settings{QuotaUsec: 50000, PeriodUsec: 100000}); err != nil {
			b.Fatal(err)
		}
	}
	var cpu, wall time.Duration
	groups := 0
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(binary, "top", "--once", "-o", "json", "--interval", "2s")
		start := time.Now()
		out, err := cmd.Output()
		if err != nil {
			b.Fatal(err)
		}
		wall += time.Since(start)
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpu += time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
		var doc struct{ Items []watch.Stats } // a GroupStatsList
		if err := json.Unmarshal(out, &doc); err != nil {
			b.Fatalf("top --once -o json printed no GroupStatsList: %v", err)
		}
		groups = len(doc.Items)
	}
	b.ReportMetric(float64(groups), "groups")
	b.ReportMetric(float64(cpu)/float64(wall)*100, "cpu-%")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/run")
}

// TestTopOnceStallSplit drives top --once -o json over a group throttled
// alone on its CPU and a group without a quota crowded by a neighbour on its
// CPU, on cgroup v2 (make test runs it in its v2 VMs), and checks the
// stall's split each gets in the JSON: the throttled group's stall mostly
// quota, the crowded group's contention only.
func TestTopOnceStallSplit(t *testing.T) {
	throttled, crowded := watchtest.StallGroups(t)
	r := run(t, "top", "--once", "-o", "json", "--interval", "2s")
	if r.code != 0 {
		t.Fatalf("top --once -o json: exit %d: %s", r.code, r.stderr)
	}
	var rawDoc struct{ Items []map[string]any } // a GroupStatsList
	if err := json.Unmarshal([]byte(r.stdout), &rawDoc); err != nil {
		t.Fatalf("top --once -o json printed no GroupStatsList: %v\n%s", err, r.stdout)
	}
	raw := rawDoc.Items
	split := func(dir string) (quota, contention, throttledPerSec float64) {
		t.Helper()
		path := watchtest.CgroupPath(t, dir)
		for _, g := range raw {
			if g["path"] != path {
				continue
			}
			q, qok := g["stall_quota_ratio"].(float64)
			c, cok := g["stall_contention_ratio"].(float64)
			th, _ := g["throttled_seconds_per_second"].(float64)
			if g["stall_split"] != watch.StallSplitPSI || !qok || !cok {
				t.Fatalf("%s: stall_split %v, stall_quota_ratio %v, stall_contention_ratio %v: want the split known on v2", path, g["stall_split"], g["stall_quota_ratio"], g["stall_contention_ratio"])
			}
			t.Logf("%s: some %v, quota %.3f, contention %.3f, throttled %.3f s/s", path, g["pressure_some_ratio"], q, c, th)
			return q, c, th
		}
		t.Fatalf("%s is not among the %d groups printed", path, len(raw))
		return 0, 0, 0
	}
	if q, c, th := split(throttled); q <= c || th <= 0 {
		t.Errorf("the group throttled alone: quota %.3f, contention %.3f, throttled %.3f s/s: want the quota to be most of its stall", q, c, th)
	}
	if q, c, _ := split(crowded); q != 0 || c <= 0 {
		t.Errorf("the crowded group without a quota: quota %.3f, contention %.3f: want contention only", q, c)
	}
}
