package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/testenv/testfs"
	"github.com/throttlelab/throttlelab/workload"
)

// Mount tables of the cases: a v1 container whose cgroup mounts are rooted at
// its own group (containerd, no cgroup namespace), a v2 container with a
// cgroup namespace, and a hybrid host with cpu and cpuacct apart.
const (
	mountsV1Container = `700 600 0:50 / / rw,relatime - overlay overlay rw
710 700 0:60 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs rw,mode=755
711 710 0:31 /kubepods/burstable/pod1/c1 /sys/fs/cgroup/cpu,cpuacct ro,nosuid - cgroup cgroup rw,cpu,cpuacct
712 710 0:32 /kubepods/burstable/pod1/c1 /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory
`
	mountsV2Container = `700 600 0:50 / / rw,relatime - overlay overlay rw
710 700 0:60 / /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw,nsdelegate
`
	mountsHybridHost = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
)

// fakeTree writes files under a new temporary root.

func TestOpenOwnCgroup(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		version string
		dir     string // relative to the root
		acct    string
		want    OwnCgroupReading
		limits  cgroup.CPULimits
		wantErr string
	}{
		{
			name: "v1 container: the mount is the container's group",
			files: map[string]string{
				"proc/self/mountinfo":                         mountsV1Container,
				"proc/self/cgroup":                            "5:memory:/kubepods/burstable/pod1/c1\n4:cpu,cpuacct:/kubepods/burstable/pod1/c1\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.stat":          "nr_periods 40\nnr_throttled 7\nthrottled_time 123456000\n",
				"sys/fs/cgroup/cpu,cpuacct/cpuacct.usage":     "987654321\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":  "50000\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.shares":        "512\n",
			},
			version: "v1", dir: "sys/fs/cgroup/cpu,cpuacct", acct: "sys/fs/cgroup/cpu,cpuacct",
			want:   OwnCgroupReading{UsageNs: 987654321, CPUStat: cgroup.CPUStat{Periods: 40, ThrottledPeriods: 7, ThrottledUsec: 123456}},
			limits: cgroup.CPULimits{CPUVersion: "v1", QuotaUsec: 50000, PeriodUsec: 100000, Shares: 512, LimitCores: 0.5},
		},
		{
			name: "v2 container with a cgroup namespace",
			files: map[string]string{
				"proc/self/mountinfo":              mountsV2Container,
				"proc/self/cgroup":                 "0::/\n",
				"sys/fs/cgroup/cgroup.controllers": "cpu memory pids\n",
				"sys/fs/cgroup/cpu.stat":           "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\nnr_periods 9\nnr_throttled 2\nthrottled_usec 800\nnr_bursts 0\nburst_usec 0\n",
				"sys/fs/cgroup/cpu.max":            "25000 100000\n",
				"sys/fs/cgroup/cpu.weight":         "10\n",
			},
			version: "v2", dir: "sys/fs/cgroup",
			want:   OwnCgroupReading{UsageNs: 2500000, CPUStat: cgroup.CPUStat{Periods: 9, ThrottledPeriods: 2, ThrottledUsec: 800}},
			limits: cgroup.CPULimits{CPUVersion: "v2", QuotaUsec: 25000, PeriodUsec: 100000, Weight: 10, LimitCores: 0.25},
		},
		{
			name: "hybrid host: cpu and cpuacct in hierarchies of their own",
			files: map[string]string{
				"proc/self/mountinfo":                      mountsHybridHost,
				"proc/self/cgroup":                         "3:cpuacct:/tl/a\n2:cpu:/tl/a\n0::/\n",
				"sys/fs/cgroup/unified/cgroup.controllers": "memory\n",
				"sys/fs/cgroup/cpu/tl/a/cpu.stat":          "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
				"sys/fs/cgroup/cpu/tl/a/cpu.cfs_quota_us":  "-1\n",
				"sys/fs/cgroup/cpu/tl/a/cpu.cfs_period_us": "100000\n",
				"sys/fs/cgroup/cpu/tl/a/cpu.shares":        "1024\n",
				"sys/fs/cgroup/cpuacct/tl/a/cpuacct.usage": "42\n",
			},
			version: "v1", dir: "sys/fs/cgroup/cpu/tl/a", acct: "sys/fs/cgroup/cpuacct/tl/a",
			want:   OwnCgroupReading{UsageNs: 42},
			limits: cgroup.CPULimits{CPUVersion: "v1", QuotaUsec: -1, PeriodUsec: 100000, Shares: 1024},
		},
		{
			name: "v2 cpu.stat without usage is refused",
			files: map[string]string{
				"proc/self/mountinfo":              mountsV2Container,
				"proc/self/cgroup":                 "0::/\n",
				"sys/fs/cgroup/cgroup.controllers": "cpu\n",
				"sys/fs/cgroup/cpu.stat":           "nr_periods 1\n",
			},
			wantErr: "has no usage_usec",
		},
		{
			name: "v1 without cpuacct: no usage",
			files: map[string]string{
				"proc/self/mountinfo":          "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n",
				"proc/self/cgroup":             "2:cpu:/a\n",
				"sys/fs/cgroup/cpu/a/cpu.stat": "nr_periods 0\n",
			},
			wantErr: "without cpuacct",
		},
		{
			name: "v1 with cpu and cpuacct at different paths",
			files: map[string]string{
				"proc/self/mountinfo":                      mountsHybridHost,
				"proc/self/cgroup":                         "3:cpuacct:/\n2:cpu:/tl/a\n0::/\n",
				"sys/fs/cgroup/unified/cgroup.controllers": "memory\n",
				"sys/fs/cgroup/cpu/tl/a/cpu.stat":          "nr_periods 0\n",
				"sys/fs/cgroup/cpuacct/cpuacct.usage":      "42\n",
			},
			wantErr: "differ",
		},
		{
			name: "no cpu controller anywhere",
			files: map[string]string{
				"proc/self/mountinfo":              mountsV2Container,
				"proc/self/cgroup":                 "0::/\n",
				"sys/fs/cgroup/cgroup.controllers": "memory\n",
			},
			wantErr: "no cgroup hierarchy has the cpu controller",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := testfs.Tree(t, tt.files)
			g, err := OpenOwnCgroup(root, "self")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			if g.Version != tt.version || g.Dir != filepath.Join(root, tt.dir) {
				t.Errorf("group = %s %s, want %s %s", g.Version, g.Dir, tt.version, filepath.Join(root, tt.dir))
			}
			if tt.acct != "" && g.AcctDir != filepath.Join(root, tt.acct) {
				t.Errorf("cpuacct group = %s, want %s", g.AcctDir, filepath.Join(root, tt.acct))
			}
			r, err := g.Read()
			if err != nil {
				t.Fatal(err)
			}
			if r != tt.want {
				t.Errorf("reading = %+v, want %+v", r, tt.want)
			}
			l, err := g.Limits()
			if err != nil {
				t.Fatal(err)
			}
			tt.limits.Group = g.Dir
			if *l != tt.limits {
				t.Errorf("limits = %+v, want %+v", *l, tt.limits)
			}
		})
	}
}

func v2Tree(t *testing.T, usageUsec, throttled int) string {
	return testfs.Tree(t, map[string]string{
		"proc/self/mountinfo":              mountsV2Container,
		"proc/self/cgroup":                 "0::/\n",
		"sys/fs/cgroup/cgroup.controllers": "cpu\n",
		"sys/fs/cgroup/cpu.max":            "50000 100000\n",
		"sys/fs/cgroup/cpu.stat":           v2Stat(usageUsec, throttled),
	})
}

func v2Stat(usageUsec, throttled int) string {
	return "usage_usec " + strconv.Itoa(usageUsec) + "\nnr_periods " + strconv.Itoa(throttled*2) + "\nnr_throttled " + strconv.Itoa(throttled) + "\nthrottled_usec 0\n"
}

func newOwnServer(t *testing.T, g *OwnCgroup, errMsg string) *httptest.Server {
	t.Helper()
	s, err := New(Config{Name: "own", Burn: workload.BurnCalibration{IterationsPerMs: 1000}, Cgroup: g, CgroupInterval: time.Millisecond, CgroupError: errMsg})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		if s.own != nil {
			s.own.end()
		}
	})
	return ts
}

func call(t *testing.T, method, url string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
	}
	return resp.StatusCode
}

// TestCgroupWindow drives the endpoints over a fake group whose counters
// move while a window is open.
func TestCgroupWindow(t *testing.T) {
	root := v2Tree(t, 1000, 1)
	g, err := OpenOwnCgroup(root, "self")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ts := newOwnServer(t, g, "")

	if code := call(t, "GET", ts.URL+"/cgroup/window", nil); code != http.StatusNotFound {
		t.Errorf("window before any start: %d, want 404", code)
	}
	if code := call(t, "GET", ts.URL+"/cgroup/start", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /cgroup/start: %d, want 405", code)
	}
	var st CgroupWindowState
	if code := call(t, "POST", ts.URL+"/cgroup/start", &st); code != http.StatusOK || !st.Active {
		t.Fatalf("start: %d %+v", code, st)
	}
	// The same inode rewritten: the open file sees the new counters.
	if err := os.WriteFile(filepath.Join(root, "sys/fs/cgroup/cpu.stat"), []byte(v2Stat(9000, 5)), 0o644); err != nil {
		t.Fatal(err)
	}
	// Wait for samples of the new counters (the sampler ticks every 1 ms).
	deadline := time.Now().Add(10 * time.Second)
	for {
		var s CgroupStatus
		call(t, "GET", ts.URL+"/cgroup", &s)
		if s.Now == nil || s.Now.UsageNs != 9000_000 {
			t.Fatalf("GET /cgroup now = %+v, want the new usage", s.Now)
		}
		if s.Window != nil && s.Window.Samples >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no samples after 10 s: %+v", s.Window)
		}
	}
	var w CgroupWindow
	if code := call(t, "POST", ts.URL+"/cgroup/stop", &w); code != http.StatusOK {
		t.Fatalf("stop: %d", code)
	}
	if w.Active || w.Before == nil || w.After == nil || w.Before.UsageNs != 1000_000 || w.After.UsageNs != 9000_000 ||
		w.After.ThrottledPeriods-w.Before.ThrottledPeriods != 4 || w.IntervalNs != int64(time.Millisecond) {
		t.Errorf("window = active %v before %+v after %+v interval %d", w.Active, w.Before, w.After, w.IntervalNs)
	}
	if w.Samples[0].TNs != 0 || w.Samples[0].UsageNs != 1000_000 {
		t.Errorf("first sample = %+v, want the start's reading at 0", w.Samples[0])
	}
	last := w.Samples[len(w.Samples)-1]
	if last.UsageNs != 9000_000 || last.Throttled != 5 {
		t.Errorf("last sample = %+v, want the new counters", last)
	}
	for i := 1; i < len(w.Samples); i++ {
		if w.Samples[i].TNs <= w.Samples[i-1].TNs || w.Samples[i].UsageNs < w.Samples[i-1].UsageNs {
			t.Fatalf("samples %d and %d out of order: %+v %+v", i-1, i, w.Samples[i-1], w.Samples[i])
		}
	}
	var again CgroupWindow
	if code := call(t, "GET", ts.URL+"/cgroup/window", &again); code != http.StatusOK || len(again.Samples) != len(w.Samples) {
		t.Errorf("window again: %d, %d samples, want %d", code, len(again.Samples), len(w.Samples))
	}
	var info InfoResponse
	call(t, "GET", ts.URL+"/info", &info)
	if info.Cgroup == nil || info.Cgroup.Version != "v2" || info.Cgroup.Limits == nil || info.Cgroup.Limits.QuotaUsec != 50000 ||
		info.Cgroup.Window == nil || info.Cgroup.Window.Active {
		t.Errorf("/info cgroup = %+v", info.Cgroup)
	}
}

// TestCgroupAbsent: a server that could not open its group says why, in
// /cgroup and in /info.
func TestCgroupAbsent(t *testing.T) {
	ts := newOwnServer(t, nil, "no cgroup hierarchy has the cpu controller")
	for _, u := range []string{"GET /cgroup", "POST /cgroup/start", "POST /cgroup/stop", "GET /cgroup/window"} {
		m, p, _ := strings.Cut(u, " ")
		if code := call(t, m, ts.URL+p, nil); code != http.StatusServiceUnavailable {
			t.Errorf("%s: %d, want 503", u, code)
		}
	}
	var info InfoResponse
	call(t, "GET", ts.URL+"/info", &info)
	if info.Cgroup == nil || !strings.Contains(info.Cgroup.Err, "cpu controller") {
		t.Errorf("/info cgroup = %+v, want the reason", info.Cgroup)
	}
}

// TestOwnCgroupReal samples a real group limited to 0.2 CPU while a shell
// loop in it burns: the counters must show it throttled, and its use stays
// near the limit (shapes only: the machine is shared).
func TestOwnCgroupReal(t *testing.T) {
	cg := cgrouptest.LimitedGroup(t, 20000, 100000)
	prefix := cg.ShellPrefix()
	inGroups := []func() []string{func() []string { return cg.Procs(t) }}
	// With cpuacct mounted apart from cpu, the loop needs a cpuacct group of
	// the same path, as a container runtime makes, for its usage.
	if l := cgrouptest.Require(t); cg.Version == "v1" && l.V1["cpuacct"].MountPoint != l.V1["cpu"].MountPoint {
		acct := filepath.Join(l.V1["cpuacct"].MountPoint, filepath.Base(cg.Dir))
		if err := os.Mkdir(acct, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			deadline := time.Now().Add(30 * time.Second)
			for os.Remove(acct) != nil && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond) // the killed loop leaves it
			}
		})
		prefix += "echo $$ > '" + filepath.Join(acct, "cgroup.procs") + "' && "
		inGroups = append(inGroups, func() []string {
			b, _ := os.ReadFile(filepath.Join(acct, "cgroup.procs"))
			return strings.Fields(string(b))
		})
	}
	cmd := exec.Command("sh", "-c", prefix+"while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := strconv.Itoa(cmd.Process.Pid)
	// The shell moves itself into the group (and its cpuacct twin) first
	// thing: wait for every move, not only the first.
	deadline := time.Now().Add(10 * time.Second)
	for _, procs := range inGroups {
		for !slices.Contains(procs(), pid) {
			if time.Now().After(deadline) {
				t.Fatal("the loop never entered its groups")
			}
			time.Sleep(time.Millisecond)
		}
	}
	g, err := OpenOwnCgroup("/", pid)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.Version != cg.Version {
		t.Errorf("version %s, want %s", g.Version, cg.Version)
	}
	l, err := g.Limits()
	if err != nil || l.QuotaUsec != 20000 || l.PeriodUsec != 100000 {
		t.Fatalf("limits = %+v, %v; want 20000/100000", l, err)
	}
	s := newOwnSampler(g, 10*time.Millisecond, time.Minute)
	if _, err := s.start(); err != nil {
		t.Fatal(err)
	}
	for {
		w := s.window()
		if n := len(w.Samples); n > 1 && w.Samples[n-1].TNs > int64(500*time.Millisecond) {
			break
		}
		if w.Err != "" {
			t.Fatal(w.Err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.end()
	w := s.window()
	if w.Err != "" || w.After == nil {
		t.Fatalf("window ended with %q", w.Err)
	}
	span := w.Samples[len(w.Samples)-1].TNs
	used := w.Samples[len(w.Samples)-1].UsageNs - w.Samples[0].UsageNs
	if used <= 0 || float64(used)/float64(span) > 0.5 {
		t.Errorf("used %d ns in %d ns: want more than nothing and well under half a CPU at a 0.2 limit", used, span)
	}
	if w.After.ThrottledPeriods <= w.Before.ThrottledPeriods || w.After.Periods <= w.Before.Periods {
		t.Errorf("cpu.stat before %+v after %+v: a loop at 0.2 CPU must be throttled", w.Before, w.After)
	}
	if n := len(w.Samples); n < 20 {
		t.Errorf("%d samples over %d ms at 10 ms", n, span/1e6)
	}
}
