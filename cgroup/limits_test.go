package cgroup

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/testenv/testfs"
)

// fakeRoot builds a fake host under t.TempDir(): the named mountinfo fixture as
// proc/self/mountinfo, procCgroup as proc/self/cgroup, and the given files.
func fakeRoot(t *testing.T, mountinfo, procCgroup string, files map[string]string) string {
	t.Helper()
	mi, err := os.ReadFile(filepath.Join("testdata/mountinfo", mountinfo))
	if err != nil {
		t.Fatal(err)
	}
	files["proc/self/mountinfo"] = string(mi)
	files["proc/self/cgroup"] = procCgroup
	return testfs.Tree(t, files)
}

func TestReadProcessLimits(t *testing.T) {
	tests := []struct {
		name       string
		mountinfo  string
		procCgroup string
		files      map[string]string
		want       CPULimits
	}{
		{
			name:       "hybrid host, v1 cpu limited, burst, cpuset",
			mountinfo:  "hybrid-host",
			procCgroup: "3:cpuset:/tl/a\n2:cpuacct:/tl/a\n1:cpu:/tl/a\n0::/\n",
			files: map[string]string{
				"sys/fs/cgroup/unified/cgroup.controllers": "memory pids\n",
				"sys/fs/cgroup/cpu/tl/a/cpu.cfs_quota_us":  "150000\n",
				"sys/fs/cgroup/cpu/tl/a/cpu.cfs_period_us": "100000\n",
				"sys/fs/cgroup/cpu/tl/a/cpu.cfs_burst_us":  "50000\n",
				"sys/fs/cgroup/cpu/tl/a/cpu.shares":        "1536\n",
				"sys/fs/cgroup/cpu/tl/cpu.cfs_quota_us":    "-1\n",
				"sys/fs/cgroup/cpu/tl/cpu.cfs_period_us":   "100000\n",
				"sys/fs/cgroup/cpuset/tl/a/cpuset.cpus":    "1\n",
			},
			want: CPULimits{Mode: ModeHybrid, CPUVersion: "v1", Group: "/sys/fs/cgroup/cpu/tl/a", QuotaUsec: 150000, PeriodUsec: 100000,
				BurstUsec: 50000, BurstSupported: true, Shares: 1536, Cpuset: "1", LimitCores: 1.5},
		},
		{
			name:       "v2 host, limit on the parent binds the child",
			mountinfo:  "v2-host",
			procCgroup: "0::/kubepods/pod1/c1\n",
			files: map[string]string{
				"sys/fs/cgroup/cgroup.controllers":                     "cpuset cpu io memory pids\n",
				"sys/fs/cgroup/kubepods/pod1/cpu.max":                  "50000 100000\n",
				"sys/fs/cgroup/kubepods/pod1/c1/cpu.max":               "max 100000\n",
				"sys/fs/cgroup/kubepods/pod1/c1/cpu.max.burst":         "0\n",
				"sys/fs/cgroup/kubepods/pod1/c1/cpu.weight":            "79\n",
				"sys/fs/cgroup/kubepods/pod1/c1/cpuset.cpus.effective": "0-3\n",
			},
			want: CPULimits{Mode: ModeV2, CPUVersion: "v2", Group: "/sys/fs/cgroup/kubepods/pod1/c1", QuotaUsec: -1, PeriodUsec: 100000,
				BurstSupported: true, Weight: 79, Cpuset: "0-3", LimitCores: 0.5},
		},
		{
			name:       "v2 root group has no cpu files",
			mountinfo:  "v2-host",
			procCgroup: "0::/\n",
			files:      map[string]string{"sys/fs/cgroup/cgroup.controllers": "cpu memory\n"},
			want:       CPULimits{Mode: ModeV2, CPUVersion: "v2", Group: "/sys/fs/cgroup", QuotaUsec: -1, PeriodUsec: 100000},
		},
		{
			name:       "v1 container sees its own group as the mount root, old kernel without burst",
			mountinfo:  "v1-container",
			procCgroup: "5:memory:/docker/abc\n3:cpuset:/docker/abc\n2:cpu,cpuacct:/docker/abc\n",
			files: map[string]string{
				"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":  "200000\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "50000\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.shares":        "2048\n",
				"sys/fs/cgroup/cpuset/cpuset.effective_cpus":  "0-7\n",
			},
			want: CPULimits{Mode: ModeV1, CPUVersion: "v1", Group: "/sys/fs/cgroup/cpu,cpuacct", QuotaUsec: 200000, PeriodUsec: 50000,
				Shares: 2048, Cpuset: "0-7", LimitCores: 4},
		},
		{
			name:       "v2 without the cpu controller (this machine's unified mount alone)",
			mountinfo:  "v2-host",
			procCgroup: "0::/x\n",
			files:      map[string]string{"sys/fs/cgroup/cgroup.controllers": "memory pids\n"},
			want:       CPULimits{Mode: ModeV2, QuotaUsec: -1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := fakeRoot(t, tt.mountinfo, tt.procCgroup, tt.files)
			got, err := ReadProcessLimits(root, "self")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func TestReadProcessLimitsErrors(t *testing.T) {
	root := fakeRoot(t, "hybrid-host", "1:cpu:/a\n", map[string]string{
		"sys/fs/cgroup/cpu/a/cpu.cfs_quota_us":  "lots\n",
		"sys/fs/cgroup/cpu/a/cpu.cfs_period_us": "100000\n",
	})
	if _, err := ReadProcessLimits(root, "self"); err == nil || !strings.Contains(err.Error(), "cpu.cfs_quota_us") {
		t.Errorf("error = %v, want one naming cpu.cfs_quota_us", err)
	}
	root = fakeRoot(t, "hybrid-host", "0::/\n", map[string]string{})
	if _, err := ReadProcessLimits(root, "self"); err == nil || !strings.Contains(err.Error(), "no cpu cgroup") {
		t.Errorf("error = %v, want one saying the process is in no cpu cgroup", err)
	}
	if _, err := ReadProcessLimits(t.TempDir(), "self"); err == nil {
		t.Error("a root without /proc gave no error")
	}
}

func TestParseMountInfo(t *testing.T) {
	f, err := os.Open("testdata/mountinfo/v1-container")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ms, err := ParseMountInfo(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 6 || ms[2].Root != "/docker/abc" || ms[2].MountPoint != "/sys/fs/cgroup/cpu,cpuacct" ||
		ms[2].FSType != "cgroup" || !reflect.DeepEqual(ms[2].SuperOptions, []string{"rw", "cpu", "cpuacct"}) {
		t.Errorf("parsed %+v", ms[2])
	}
	if ms[5].MountPoint != "/mnt/with space" {
		t.Errorf("escaped mount point = %q, want %q", ms[5].MountPoint, "/mnt/with space")
	}
	if _, err := ParseMountInfo(strings.NewReader("1 2 3\n")); err == nil {
		t.Error("malformed line accepted")
	}
}

func TestParseProcCgroup(t *testing.T) {
	got, err := ParseProcCgroup(strings.NewReader("9:name=systemd:/\n2:cpu,cpuacct:/a/b\n0::/c\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []ProcCgroup{{9, []string{"name=systemd"}, "/"}, {2, []string{"cpu", "cpuacct"}, "/a/b"}, {0, nil, "/c"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, bad := range []string{"x:cpu:/\n", "1:cpu\n"} {
		if _, err := ParseProcCgroup(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseCPUMax(t *testing.T) {
	tests := []struct {
		in      string
		quota   int64
		period  uint64
		wantErr bool
	}{
		{"max 100000\n", -1, 100000, false},
		{"50000 100000", 50000, 100000, false},
		{"50000", 0, 0, true},
		{"x 100000", 0, 0, true},
		{"50000 0", 0, 0, true},
	}
	for _, tt := range tests {
		q, p, err := ParseCPUMax([]byte(tt.in))
		if (err != nil) != tt.wantErr || q != tt.quota || p != tt.period {
			t.Errorf("ParseCPUMax(%q) = %d, %d, %v", tt.in, q, p, err)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{"0-3,6\n", []int{0, 1, 2, 3, 6}, false},
		{"1", []int{1}, false},
		{"", nil, false},
		{"3-1", nil, true},
		{"a", nil, true},
		{"-1", nil, true},
		{"3,1-2,2", []int{1, 2, 3}, false},
		{"4095", []int{4095}, false},
		{"0-10000000", nil, true},
		{"4096", nil, true},
		{"99999999999999999999", nil, true},
		{"+1", nil, true},
		{"1-", nil, true},
		{",", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseCPUList(tt.in)
		if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v", tt.in, got, err)
		}
	}
}

func TestOnlineCPUs(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "sys/devices/system/cpu"), 0o755)
	os.WriteFile(filepath.Join(root, "sys/devices/system/cpu/online"), []byte("0-15\n"), 0o644)
	if n, err := OnlineCPUs(root); n != 16 || err != nil {
		t.Errorf("OnlineCPUs = %d, %v, want 16", n, err)
	}
	if _, err := OnlineCPUs(t.TempDir()); err == nil {
		t.Error("missing file gave no error")
	}
}

func TestBurstSupported(t *testing.T) {
	for _, c := range []struct {
		name, mountinfo string
		files           map[string]string
		want            bool
	}{
		{"v1 with burst", "hybrid-host", map[string]string{"sys/fs/cgroup/cpu/cpu.cfs_burst_us": "0\n"}, true},
		{"v1 without", "hybrid-host", map[string]string{"sys/fs/cgroup/cpu/cpu.cfs_quota_us": "-1\n"}, false},
		{"v2 with burst", "v2-host", map[string]string{"sys/fs/cgroup/cgroup.controllers": "cpu\n", "sys/fs/cgroup/system.slice/cpu.max.burst": "0\n"}, true},
		{"v2 without", "v2-host", map[string]string{"sys/fs/cgroup/cgroup.controllers": "cpu\n", "sys/fs/cgroup/system.slice/cpu.max": "max 100000\n"}, false},
	} {
		root := fakeRoot(t, c.mountinfo, "0::/\n", c.files)
		got, err := BurstSupported(root)
		if err != nil || got != c.want {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}

// TestParseCPUListBounded: a huge range is refused before it is expanded
// (expanding it would take memory and time in proportion to the range).
func TestParseCPUListBounded(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		if _, err := ParseCPUList("0-10000000"); err == nil {
			t.Fatal("0-10000000 accepted")
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 10; per > 64<<10 {
		t.Errorf("ParseCPUList(\"0-10000000\") allocated %d bytes", per)
	}
	all, err := ParseCPUList("0-4095,0-4095")
	if err != nil || len(all) != 4096 {
		t.Errorf("the whole range: %d CPUs, %v", len(all), err)
	}
}
