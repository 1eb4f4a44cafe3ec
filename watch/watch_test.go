package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"

	"github.com/throttlelab/throttlelab/watch/watchtest"
)

func expand(t *testing.T, name string) string { return watchtest.FakeRoot(t, name) }

func writeFile(t *testing.T, root, p, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// containerSecond watches the v2 fake tree's containerd container, samples
// it, and writes its cpu.stat of a second later: 200 ms used, 8 of 10
// periods throttled, 600 ms throttled, 2 bursts. It returns the watcher
// (closed with the test), the tree and the container's directory in it.
func containerSecond(t *testing.T) (w *Watcher, root, dir string) {
	t.Helper()
	root = expand(t, "v2-kubepods-systemd")
	w, err := New(Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	w.Sample(0)
	dir = "sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podabcdef01_2345_4678_9abc_def012345678.slice/cri-containerd-d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4.scope/"
	writeFile(t, root, dir+"cpu.stat", "usage_usec 1000000\nuser_usec 880000\nsystem_usec 120000\nnr_periods 410\nnr_throttled 308\nthrottled_usec 20600000\nnr_bursts 5\nburst_usec 45000\n")
	return w, root, dir
}

func TestStatsFromFakeTree(t *testing.T) {
	// The figures behind the golden table, checked by hand for the v2 pod:
	// 200 ms used in 1 s, 8 of 10 periods throttled, 600 ms throttled, 2
	// bursts, 600 ms of 1 s with some task waiting.
	w, root, dir := containerSecond(t)
	writeFile(t, root, dir+"cpu.pressure", "some avg10=45.00 avg60=31.00 avg300=10.50 total=5600000\nfull avg10=41.00 avg60=28.50 avg300=9.10 total=5000000\n")
	w.Sample(time.Second)
	var got *Stats
	stats := w.Report()
	for i := range stats {
		if stats[i].ContainerID != "" && stats[i].Kind == KindContainer && stats[i].Runtime == "containerd" {
			got = &stats[i]
		}
	}
	if got == nil {
		t.Fatalf("no containerd container among %d groups", len(stats))
	}
	near := func(name string, v *float64, want float64) {
		if v == nil || *v < want-1e-9 || *v > want+1e-9 {
			t.Errorf("%s = %v, want %g", name, v, want)
		}
	}
	if got.Name != "web/api-0/api" || got.Namespace != "web" || got.Pod != "api-0" || got.Container != "api" || got.QoS != "Burstable" || got.PodUID != "abcdef01-2345-4678-9abc-def012345678" {
		t.Errorf("identity %+v", got.Identity)
	}
	near("usage", got.UsageCores, 0.2)
	near("limit", got.LimitCores, 0.2)
	near("burst", &got.BurstCores, 0.1)
	near("pressure ratio", got.PressureSomeRatio, 0.6)
	near("pressure avg10", got.PressureSomeAvg10, 45)
	near("throttled ratio", &got.ThrottledPeriodsRatio, 0.8)
	near("throttled s/s", &got.ThrottledSecondsPerSecond, 0.6)
	near("request", got.RequestCores, 0.2451171875) // weight 10: shares 238 to 264 (linear)
	// One thread's worth of use (0.2 of 1 s) beside 0.6 s of stall: one CPU,
	// and the 0.6 s throttled on it are the whole stall.
	if got.StallSplit != StallSplitPSI {
		t.Errorf("stall split %q, want %q", got.StallSplit, StallSplitPSI)
	}
	near("stall quota", got.StallQuotaRatio, 0.6)
	near("stall contention", got.StallContentionRatio, 0)
	near("stall quota total", got.Totals.StallQuotaSeconds, 0.6)
	near("stall contention total", got.Totals.StallContentionSeconds, 0)
	if got.Periods != 10 || got.ThrottledPeriods != 8 || got.Bursts != 2 || got.Procs != 1 || got.Totals.UsageSeconds != 1 || *got.Totals.PressureFullSeconds != 5 {
		t.Errorf("counts %+v", got)
	}
}

// failingFile fails every read with err after ok reads.
type failingFile struct {
	cgroup.CounterFile
	ok  int
	err error
}

func (f *failingFile) Read() ([]byte, error) {
	if f.ok == 0 {
		return nil, f.err
	}
	f.ok--
	return f.CounterFile.Read()
}

func TestGroupsVanishAndAppear(t *testing.T) {
	root := expand(t, "v1-split")
	w, err := New(Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sshd := "/system.slice/sshd.service"
	docker := "/docker/abababababababababababababababababababababababababababababababab"
	// The kernel answers ENODEV on a file kept open past its group's rmdir:
	// sshd's group goes in the middle of an interval, after two samples
	// (its directory is still there in this fake tree: the error alone
	// must drop it).
	g := w.groups[sshd]
	g.counters.Usage = &failingFile{CounterFile: g.counters.Usage, ok: 2, err: syscall.ENODEV} // the file read at every sample (cpu.stat only with a quota)
	w.Sample(0)
	w.Sample(10 * time.Millisecond)
	w.Sample(15 * time.Millisecond)
	// docker's directory goes after the last sample, before the report.
	for _, h := range []string{"cpu", "cpuacct"} {
		if err := os.RemoveAll(filepath.Join(root, "sys/fs/cgroup", h, docker)); err != nil {
			t.Fatal(err)
		}
	}
	rows := w.Report()
	paths := map[string]bool{}
	for _, s := range rows {
		paths[s.Path] = true
	}
	if paths[sshd] || paths[docker] || !paths["/system.slice"] {
		t.Errorf("after two groups went, the report holds %v", paths)
	}
	// A new group appears and an old one is made again under the same path,
	// its counters starting over.
	newDir := filepath.Join(root, "sys/fs/cgroup/cpu/system.slice/new.service")
	os.MkdirAll(newDir, 0o755)
	for f, v := range map[string]string{"cpu.cfs_quota_us": "-1\n", "cpu.cfs_period_us": "100000\n", "cpu.shares": "1024\n", "cpu.stat": "nr_periods 0\n", "cgroup.procs": "9\n"} {
		if err := os.WriteFile(filepath.Join(newDir, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Discover(); err != nil {
		t.Fatal(err)
	}
	w.Sample(20 * time.Millisecond)
	w.Sample(30 * time.Millisecond)
	w.Sample(40 * time.Millisecond)
	paths = map[string]bool{}
	for _, s := range w.Report() {
		paths[s.Path] = true
		if s.Error != "" {
			t.Errorf("%s: %s", s.Path, s.Error)
		}
	}
	if !paths["/system.slice/new.service"] || !paths[sshd] || paths[docker] {
		t.Errorf("after rediscovery the report holds %v", paths)
	}
	// new.service was made in the cpu hierarchy only, so far: no usage. Its
	// cpuacct twin comes next, and the next discovery counts its usage.
	acct := filepath.Join(root, "sys/fs/cgroup/cpuacct/system.slice/new.service")
	os.MkdirAll(acct, 0o755)
	writeFile(t, acct, "cpuacct.usage", "5\n")
	if err := w.Discover(); err != nil {
		t.Fatal(err)
	}
	w.Sample(50 * time.Millisecond)
	w.Sample(60 * time.Millisecond)
	for _, s := range w.Report() {
		if s.Path == "/system.slice/new.service" && s.UsageCores == nil {
			t.Error("a group whose cpuacct twin appeared later still has no usage")
		}
	}
}

func TestUnreadableGroupsAreShownAsSuch(t *testing.T) {
	root := expand(t, "v1-split")
	w := &Watcher{opts: Options{Root: root}, groups: map[string]*group{}}
	w.opts.defaults()
	var err error
	if w.src, err = FindSource(root); err != nil {
		t.Fatal(err)
	}
	w.open = func(p string, size int) (cgroup.CounterFile, error) {
		if strings.Contains(p, "sshd.service") {
			return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrPermission}
		}
		return cgroup.OpenCounterFile(p, size)
	}
	if err := w.Discover(); err != nil {
		t.Fatal(err)
	}
	w.Sample(0)
	w.Sample(time.Second)
	var sshd, others int
	for _, s := range w.Report() {
		switch {
		case strings.HasSuffix(s.Path, "sshd.service"):
			sshd++
			if s.Error != "permission denied (run as root)" || s.Name != "sshd.service" || s.UsageCores != nil {
				t.Errorf("unreadable group shows %+v", s)
			}
		case s.Error == "":
			others++
		}
	}
	if sshd != 1 || others < 5 {
		t.Errorf("%d rows for the unreadable group, %d readable rows", sshd, others)
	}
}

// flakyFile fails its reads while fail is set (EBUSY: a transient error
// of a group that is still there).
type flakyFile struct {
	cgroup.CounterFile
	fail *bool
}

func (f flakyFile) Read() ([]byte, error) {
	if *f.fail {
		return nil, syscall.EBUSY
	}
	return f.CounterFile.Read()
}

// TestTransientReadErrors: a read that fails while the group is there is
// counted, the group's row shows the error only while its last read
// failed, and the next sample reads it again (no Discover): the next row's
// interval runs from the last row's, its usage all counted.
func TestTransientReadErrors(t *testing.T) {
	root := expand(t, "v1-split")
	const sshd = "/system.slice/sshd.service"
	fail := false
	w, err := New(Options{Root: root, Open: func(p string, size int) (cgroup.CounterFile, error) {
		f, err := cgroup.OpenCounterFile(p, size)
		if err != nil || !strings.Contains(p, "sshd.service") {
			return f, err
		}
		return flakyFile{f, &fail}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	usage := filepath.Join(root, "sys/fs/cgroup/cpuacct/system.slice/sshd.service/cpuacct.usage")
	set := func(ns int) { writeFile(t, filepath.Dir(usage), "cpuacct.usage", fmt.Sprintf("%d\n", ns)) }
	set(0)
	w.Sample(0)
	w.Sample(time.Second)
	fail = true
	set(500_000_000)
	w.Sample(2 * time.Second)
	st := find(w.Report(), sshd)
	if st == nil || !strings.Contains(st.Error, "busy") {
		t.Fatalf("the row of a group whose last read failed: %+v", st)
	}
	if w.ReadErrors() != 1 {
		t.Errorf("%d read errors counted, want 1", w.ReadErrors())
	}
	w.Sample(3 * time.Second)
	fail = false
	set(1_000_000_000)
	w.Sample(4 * time.Second)
	st = find(w.Report(), sshd)
	if st == nil || st.Error != "" || st.UsageCores == nil {
		t.Fatalf("the row after a read that worked again: %+v", st)
	}
	// the row with the error closed no interval: this one runs from the
	// start, 1 s of CPU over 4 s
	if got := *st.UsageCores; math.Abs(got-0.25) > 1e-9 {
		t.Errorf("usage %.4f cores over the interval, want 0.25", got)
	}
	if w.ReadErrors() != 2 {
		t.Errorf("%d read errors counted, want 2", w.ReadErrors())
	}
}

func TestNoCgroupFilesystem(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc/self"), 0o755)
	writeFile(t, root, "proc/self/mountinfo", "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n")
	_, err := New(Options{Root: root})
	if err == nil || !strings.Contains(err.Error(), "no cgroup filesystem") {
		t.Errorf("New on a host without cgroups: %v", err)
	}
	if errors.Is(err, fs.ErrNotExist) {
		t.Errorf("want a plain message, got %v", err)
	}
}

// TestGroupsFoundBetweenReports: a group made while Run runs is sampled
// before the next report (here an hour away): its directory's creation is
// seen (inotify), and so is a group made in a directory found that way.
// Each is made when the look again that follows new watches is over (two
// Rediscovers after), so only the event can find it.
func TestGroupsFoundBetweenReports(t *testing.T) {
	root := expand(t, "v1-joined-kubepods-cgroupfs")
	const podDir = "sys/fs/cgroup/cpu,cpuacct/kubepods/besteffort/pod0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	const c2 = "c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2"
	const c3 = "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3"
	pod, staged := filepath.Join(root, podDir), filepath.Join(root, "staged")
	if err := os.Rename(pod, staged); err != nil {
		t.Fatal(err)
	}
	// a second container of the pod, made once the pod was found
	second := filepath.Join(root, "second")
	if err := os.CopyFS(second, os.DirFS(filepath.Join(staged, c2))); err != nil {
		t.Fatal(err)
	}
	podPath := "/kubepods/besteffort/pod0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var made [2]time.Duration // when each was made (0: not yet)
	var found [2]time.Duration
	observe := func(s Sample) bool {
		path, at := s.Path, s.At
		switch {
		case path == "/" && made[0] == 0 && at >= 2*Rediscover:
			made[0] = at
			if err := os.Rename(staged, pod); err != nil {
				t.Error(err)
			}
		case path == podPath+"/"+c2 && found[0] == 0:
			found[0] = at
		case path == "/" && found[0] > 0 && made[1] == 0 && at >= found[0]+2*Rediscover:
			made[1] = at
			if err := os.Rename(second, filepath.Join(pod, c3)); err != nil {
				t.Error(err)
			}
		case path == podPath+"/"+c3:
			found[1] = at
			cancel()
		}
		return false
	}
	w, err := New(Options{Root: root, ByNeed: ByNeed{Policy: TestPolicy{ObserveFn: observe}}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Run(ctx, time.Hour, func([]Stats) bool { t.Error("a report within the hour"); return false }); err != nil {
		t.Fatal(err)
	}
	if found[0] == 0 || found[1] == 0 {
		t.Fatalf("groups made at %v were found at %v (%v); want both found", made, found, ctx.Err())
	}
	t.Logf("made at %v, found at %v", made, found)
}

// countingFile counts its reads.
type countingFile struct {
	cgroup.CounterFile
	n int
}

func (f *countingFile) Read() ([]byte, error) {
	f.n++
	return f.CounterFile.Read()
}

// TestV1StatReadOnlyWithAQuota: on v1, where cpu.stat is a file apart from
// the usage, a group without a quota has its bandwidth counters read once
// and carried on (they do not move without one); a group with a quota, or
// one given a quota since (seen at the next sample by the write's inotify
// event; without inotify, at the next report), is read at every sample.
func TestV1StatReadOnlyWithAQuota(t *testing.T) {
	root := expand(t, "v1-split")
	// counters left from a quota it had once
	writeFile(t, root, "sys/fs/cgroup/cpu/system.slice/sshd.service/cpu.stat", "nr_periods 120\nnr_throttled 7\nthrottled_time 90000000\nnr_bursts 0\nburst_time 0\n")
	w, err := New(Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sshd, limited := w.groups["/system.slice/sshd.service"], w.groups["/throttlelab/limits-4242/limited-0"]
	cs, cl := &countingFile{CounterFile: sshd.counters.Stat}, &countingFile{CounterFile: limited.counters.Stat}
	sshd.counters.Stat, limited.counters.Stat = cs, cl
	for i := range 5 {
		w.Sample(time.Duration(i) * 10 * time.Millisecond)
	}
	if cs.n != 1 || cl.n != 5 {
		t.Fatalf("cpu.stat read %d times for the group without a quota (want once), %d for the one with (want 5)", cs.n, cl.n)
	}
	before := find(w.Report(), "/system.slice/sshd.service")
	if before == nil || before.Totals.Periods != 120 || before.Totals.ThrottledPeriods != 7 || before.Periods != 0 {
		t.Fatalf("the counters read once are not carried on: %+v", before)
	}
	writeFile(t, root, "sys/fs/cgroup/cpu/system.slice/sshd.service/cpu.cfs_quota_us", "50000\n")
	w.Sample(60 * time.Millisecond)
	w.Report() // sees the quota
	for i := range 3 {
		w.Sample(time.Duration(70+10*i) * time.Millisecond)
	}
	want := 1 + 4 // once, then at every sample after the write
	if w.events == nil {
		want = 1 + 3 // at every sample after the report that saw the quota
	}
	if cs.n != want {
		t.Errorf("after a quota was set, cpu.stat read %d times in all, want %d", cs.n, want)
	}
}

func find(stats []Stats, path string) *Stats {
	for i := range stats {
		if stats[i].Path == path {
			return &stats[i]
		}
	}
	return nil
}

// TestEveryReadsOthersAtReports: with Options.Every, the groups it picks are
// read at every sample and the others at their first sample and at each
// report: their rows keep the interval's totals and mean use, without a
// peak within a period; Observe sees both.
func TestEveryReadsOthersAtReports(t *testing.T) {
	root := expand(t, "v2-kubepods-systemd")
	const pod = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podabcdef01_2345_4678_9abc_def012345678.slice"
	const ctr = pod + "/cri-containerd-d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4.scope"
	observed := map[string]int{}
	w, err := New(Options{Root: root, ByNeed: ByNeed{Policy: TestPolicy{
		PicksFn: func(id Identity) bool { return id.Kind == KindContainer && !id.Sandbox && id.PodUID != "" },
		ObserveFn: func(s Sample) bool {
			path := s.Path
			observed[path]++
			return false
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cp, cc := &countingFile{CounterFile: w.groups[pod].counters.Stat}, &countingFile{CounterFile: w.groups[ctr].counters.Stat}
	w.groups[pod].counters.Stat, w.groups[ctr].counters.Stat = cp, cc
	for i := range 30 {
		w.Sample(time.Duration(i) * 10 * time.Millisecond)
	}
	if cp.n != 1 || cc.n != 30 {
		t.Fatalf("after 30 samples: the pod's cpu.stat read %d times (want 1), the container's %d (want 30)", cp.n, cc.n)
	}
	// the pod's group used 0.5 s more by the report (290 ms after its first)
	writeFile(t, root, "sys/fs/cgroup"+pod+"/cpu.stat", "usage_usec 1300000\nuser_usec 0\nsystem_usec 0\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n")
	stats := w.Report()
	if cp.n != 2 {
		t.Errorf("the pod's cpu.stat read %d times by the report, want 2", cp.n)
	}
	p, c := find(stats, pod), find(stats, ctr)
	if p == nil || c == nil {
		t.Fatalf("rows: pod %v, container %v", p, c)
	}
	if p.UsageCores == nil || math.Abs(*p.UsageCores-0.5/0.29) > 1e-6 {
		t.Errorf("the pod's mean use %v, want %.3f (0.5 s over 290 ms)", p.UsageCores, 0.5/0.29)
	}
	if p.PeakPeriodCores != nil {
		t.Errorf("the pod's peak within a period %v from two readings 290 ms apart, want none", *p.PeakPeriodCores)
	}
	if observed[pod] != 2 || observed[ctr] != 30 {
		t.Errorf("observed the pod %d times (want 2), the container %d (want 30)", observed[pod], observed[ctr])
	}
}

// TestV1StatReadWhileCountersMove: on v1, a limited group's cpu.stat is
// read at every sample while its usage or its cpu.stat moved within
// statIdle
// (two periods and two samples: the period timer's last ticks), and not
// after (its counters cannot move while the timer is stopped, and the last
// ones read are carried on); at the sample at which its usage moves again
// it is read again, and so is a tick that moves cpu.stat alone within statIdle.
func TestV1StatReadWhileCountersMove(t *testing.T) {
	root := expand(t, "v1-split")
	const dir = "sys/fs/cgroup/%s/throttlelab/limits-4242/limited-0/%s"
	usage := func(ns int) {
		writeFile(t, root, fmt.Sprintf(dir, "cpuacct", "cpuacct.usage"), fmt.Sprintf("%d\n", ns))
	}
	stat := func(periods int) {
		writeFile(t, root, fmt.Sprintf(dir, "cpu", "cpu.stat"), fmt.Sprintf("nr_periods %d\nnr_throttled 1\nthrottled_time 5000000\nnr_bursts 0\nburst_time 0\n", periods))
	}
	usage(1e9)
	stat(10)
	w, err := New(Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	g := w.groups["/throttlelab/limits-4242/limited-0"]
	cs := &countingFile{CounterFile: g.counters.Stat}
	g.counters.Stat = cs
	ms := time.Millisecond
	idle := statIdle(100*ms, 10*ms) // 220 ms
	reads := func(from, to time.Duration) int {
		n := cs.n
		for at := from; at < to; at += 10 * ms {
			w.Sample(at)
		}
		return cs.n - n
	}
	if n := reads(0, 100*ms); n != 10 {
		t.Errorf("the first 100 ms: cpu.stat read %d times, want 10 (the first sample starts the group's activity)", n)
	}
	stat(11) // the timer's tick at 100 ms
	if n := reads(100*ms, 200*ms); n != 10 {
		t.Errorf("100-200 ms: %d reads, want 10", n)
	}
	// The tick at 100 ms was the last move: reads go on until 100 ms + statIdle.
	if n := reads(200*ms, 600*ms); n != int((idle-100*ms)/(10*ms))+1 {
		t.Errorf("200-600 ms, idle since 100 ms: %d reads, want %d (to 100 ms + %s)", n, int((idle-100*ms)/(10*ms))+1, idle)
	}
	if got := g.last.Periods; got != 11 {
		t.Errorf("nr_periods carried on %d, want 11", got)
	}
	usage(1e9 + 5e6) // it runs again
	stat(12)
	if n := reads(600*ms, 610*ms); n != 1 {
		t.Errorf("the sample at which the usage moved again: %d reads, want 1", n)
	}
	if got := g.last.Periods; got != 12 {
		t.Errorf("nr_periods %d after the group ran again, want 12", got)
	}
}

// TestCoarseReadsHotGroupsOnly: with Options.Coarse, a group Every picks is
// read at the coarse grid's instants until Observe calls it hot, and at
// every instant from then on; the others as before.
func TestCoarseReadsHotGroupsOnly(t *testing.T) {
	root := expand(t, "v2-kubepods-systemd")
	const pod = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podabcdef01_2345_4678_9abc_def012345678.slice"
	const ctr = pod + "/cri-containerd-d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4.scope"
	var reads []time.Duration
	w, err := New(Options{Root: root, ByNeed: ByNeed{Policy: TestPolicy{
		PicksFn:  func(id Identity) bool { return id.Kind == KindContainer && !id.Sandbox && id.PodUID != "" },
		OnGridFn: func(at time.Duration) bool { return at%(100*time.Millisecond) == 0 },
		ObserveFn: func(s Sample) bool {
			path, at := s.Path, s.At
			if path != ctr {
				return false
			}
			reads = append(reads, at)
			return at >= 150*time.Millisecond
		},
	}, Coarse: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 30 {
		w.Sample(time.Duration(i) * 10 * time.Millisecond)
		if want := i >= 20; w.hot != want {
			t.Fatalf("after the sample at %d ms the watcher has a hot group: %v, want %v", i*10, w.hot, want)
		}
	}
	// 0 (its first), 100, 200 (on the grid: hot from here), 210 to 290
	if len(reads) != 12 || reads[2] != 200*time.Millisecond || reads[3] != 210*time.Millisecond {
		t.Errorf("the container read at %v; want 0, 100 ms, then every 10 ms from 200 ms", reads)
	}
}

// TestCoarseHotGroupTurnsCold: a group read at every instant while hot is
// read on the grid only once Observe says it is cold again (off the grid
// the watcher goes through the hot groups alone), and a group found by a
// Discover is read at its first sample, off the grid too.
func TestCoarseHotGroupTurnsCold(t *testing.T) {
	root := expand(t, "v2-kubepods-systemd")
	const pod = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podabcdef01_2345_4678_9abc_def012345678.slice"
	const ctr = pod + "/cri-containerd-d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4.scope"
	const newer = pod + "/cri-containerd-e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5.scope"
	reads := map[string][]time.Duration{}
	w, err := New(Options{Root: root, ByNeed: ByNeed{Policy: TestPolicy{
		PicksFn:  func(id Identity) bool { return id.Kind == KindContainer && !id.Sandbox && id.PodUID != "" },
		OnGridFn: func(at time.Duration) bool { return at%(100*time.Millisecond) == 0 },
		ObserveFn: func(s Sample) bool {
			path, at := s.Path, s.At
			reads[path] = append(reads[path], at)
			return path == ctr && at >= 100*time.Millisecond && at < 130*time.Millisecond
		},
	}, Coarse: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ms := time.Millisecond
	for i := range 25 {
		if i == 15 {
			os.MkdirAll(filepath.Join(root, "sys/fs/cgroup"+newer), 0o755)
			writeFile(t, root, "sys/fs/cgroup"+newer+"/cpu.stat", "usage_usec 10\nuser_usec 0\nsystem_usec 0\n")
			if err := w.Discover(); err != nil {
				t.Fatal(err)
			}
		}
		w.Sample(time.Duration(i) * 10 * ms)
	}
	want := []time.Duration{0, 100 * ms, 110 * ms, 120 * ms, 130 * ms, 200 * ms} // hot from 100 ms, cold at 130 ms
	if fmt.Sprint(reads[ctr]) != fmt.Sprint(want) {
		t.Errorf("the container read at %v, want %v", reads[ctr], want)
	}
	// The kubelet's logs of the fake tree do not name it: taken for the
	// pod's sandbox, it is read at its first sample (off the grid) and
	// then at reports only.
	if got := reads[newer]; len(got) != 1 || got[0] != 150*ms {
		t.Errorf("the group found at 150 ms read at %v, want at 150 ms (its first sample) alone", got)
	}
}

// TestCoarseGroupsReportedOffTheGrid: a report at an instant off the
// coarse grid, right after a gap, still has a row for a group read on the
// grid only (it is read at the report).
func TestCoarseGroupsReportedOffTheGrid(t *testing.T) {
	root := expand(t, "v2-kubepods-systemd")
	const ctr = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podabcdef01_2345_4678_9abc_def012345678.slice/cri-containerd-d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4.scope"
	w, err := New(Options{Root: root, ByNeed: ByNeed{Policy: TestPolicy{
		PicksFn:   func(id Identity) bool { return id.Kind == KindContainer && !id.Sandbox && id.PodUID != "" },
		OnGridFn:  func(at time.Duration) bool { return at%(100*time.Millisecond) == 0 },
		ObserveFn: func(s Sample) bool { return false },
	}, Coarse: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 21 {
		w.Sample(time.Duration(i) * 10 * time.Millisecond)
	}
	w.Report()
	w.Sample(time.Hour + 10*time.Millisecond) // after a gap, off the grid
	if find(w.Report(), ctr) == nil {
		t.Error("a report off the grid after a gap has no row for the container read on the grid")
	}
}

// TestSettingsEveryCarriesColdGroupsSettings: with Options.SettingsEvery a
// cold group's quota is read again only once that long has passed since
// the last read (the values between are the last read), a hot group's at
// every report.
func TestSettingsEveryCarriesColdGroupsSettings(t *testing.T) {
	root := expand(t, "v2-kubepods-systemd")
	const dir = "sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podabcdef01_2345_4678_9abc_def012345678.slice/cri-containerd-d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4.scope/"
	hot := false
	w, err := New(Options{Root: root, ByNeed: ByNeed{Policy: TestPolicy{
		ObserveFn: func(s Sample) bool { return hot },
	}, SettingsEvery: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	limit := func(at time.Duration) float64 {
		t.Helper()
		w.Sample(at)
		for _, st := range w.Report() {
			if st.ContainerID != "" && st.Runtime == "containerd" {
				if st.LimitCores == nil || st.Procs != 1 {
					t.Fatalf("at %s: limit %v, %d processes", at, st.LimitCores, st.Procs)
				}
				return *st.LimitCores
			}
		}
		t.Fatalf("at %s: no containerd container", at)
		return 0
	}
	w.Sample(0)
	first := limit(time.Second)
	steps := []struct {
		at    time.Duration
		hot   bool
		quota int
		want  float64
	}{
		{11 * time.Second, false, 40000, first}, // cold, read 10 s ago
		{21 * time.Second, true, 40000, 0.4},    // hot: read at every report
		{31 * time.Second, false, 60000, 0.4},   // cold again: carried
		{80 * time.Second, false, 60000, 0.4},   // 59 s since the last read (21 s): not yet
		{81 * time.Second, false, 60000, 0.6},
	}
	for _, s := range steps {
		hot = s.hot
		writeFile(t, root, dir+"cpu.max", fmt.Sprintf("%d 100000\n", s.quota))
		if got := limit(s.at); got < s.want-1e-9 || got > s.want+1e-9 {
			t.Errorf("at %s (hot %v): limit %g, want %g", s.at, s.hot, got, s.want)
		}
	}
}

// TestGateCarriesIdleGroups: with Options.Coarse, a cold group Every picks
// is not read at a grid instant where the gate (the lowest group holding
// every such group: here their pod) has not moved since its last read (it
// cannot have used CPU), and is read again as soon as the gate moves; its
// carried readings reach Observe as read ones do. A group whose cpu.stat
// is still due (within statIdle of its counters moving) is read all the
// same.
func TestGateCarriesIdleGroups(t *testing.T) {
	root := expand(t, "v2-kubepods-systemd")
	const pod = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podabcdef01_2345_4678_9abc_def012345678.slice"
	const c1 = pod + "/cri-containerd-d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4.scope"
	const c2 = pod + "/cri-containerd-e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5.scope"
	src := filepath.Join(root, "sys/fs/cgroup", c1)
	if err := os.Mkdir(filepath.Join(root, "sys/fs/cgroup", c2), 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, root, filepath.Join("sys/fs/cgroup", c2, e.Name()), string(b))
	}
	observed := map[string][]uint64{}
	w, err := New(Options{Root: root, ByNeed: ByNeed{Policy: TestPolicy{
		PicksFn:  func(id Identity) bool { return id.Kind == KindContainer && id.PodUID != "" },
		OnGridFn: func(at time.Duration) bool { return at%(100*time.Millisecond) == 0 },
		ObserveFn: func(s Sample) bool {
			path, usage := s.Path, s.UsageNs
			observed[path] = append(observed[path], usage)
			return false
		},
	}, Coarse: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if want := filepath.Join(root, "sys/fs/cgroup", pod); len(w.gates) != 1 || w.gates[0].dir != want {
		t.Fatalf("gates %v, want one: the pod's group %q", gateDirs(w), want)
	}
	c1f, c2f := &countingFile{CounterFile: w.groups[c1].counters.Stat}, &countingFile{CounterFile: w.groups[c2].counters.Stat}
	w.groups[c1].counters.Stat, w.groups[c2].counters.Stat = c1f, c2f
	stat := func(dir string, usec int) {
		writeFile(t, root, filepath.Join("sys/fs/cgroup", dir, "cpu.stat"), fmt.Sprintf("usage_usec %d\nuser_usec 0\nsystem_usec 0\nnr_periods 400\nnr_throttled 300\nthrottled_usec 20000000\n", usec))
	}
	sample := func(from, to int) {
		for i := from; i < to; i++ {
			w.Sample(time.Duration(i) * 10 * time.Millisecond)
		}
	}
	// Their first reads (0 ms), then within statIdle of them (220 ms: two
	// periods of 100 ms and two samples) at 100 and 200 ms; from 300 ms on
	// nothing moved: carried.
	sample(0, 100)
	if c1f.n != 3 || c2f.n != 3 {
		t.Fatalf("idle for a second: the containers' cpu.stat read %d and %d times, want 3 (0, 100 and 200 ms)", c1f.n, c2f.n)
	}
	if len(observed[c1]) != 10 || len(observed[c2]) != 10 {
		t.Fatalf("observed %d and %d readings, want one per grid instant (10)", len(observed[c1]), len(observed[c2]))
	}
	// c2 runs: the pod's usage moves with it; both are read at the next
	// grid instant, c2's new usage seen.
	stat(c2, 900000)
	stat(pod, 900000)
	sample(100, 101)
	if c1f.n != 4 || c2f.n != 4 {
		t.Errorf("after the pod's usage moved: read %d and %d times, want 4 each", c1f.n, c2f.n)
	}
	if got := observed[c2][len(observed[c2])-1]; got != 900000*1000 {
		t.Errorf("c2's usage after it ran: %d ns, want %d", got, 900000*1000)
	}
	// c2 is read at every grid instant while its cpu.stat is due (its
	// counters moved at 1 s); c1 did not move: carried again.
	sample(101, 200)
	if c1f.n != 4 || c2f.n != 4+2 {
		t.Errorf("a second later: read %d and %d times, want 4 (carried) and 6 (1.1 and 1.2 s, within statIdle)", c1f.n, c2f.n)
	}
	if len(observed[c1]) != 20 || len(observed[c2]) != 20 {
		t.Errorf("observed %d and %d readings, want 20", len(observed[c1]), len(observed[c2]))
	}
}

// TestPerCPUReadsV1SplitForUsage: with Options.PerCPU a hot group's split
// reaches Observe, and on v1 cpuacct.usage_percpu stands for
// cpuacct.usage (its sum), which is not read while the group is hot; a
// cold group has no split and its usage is read as before.
func TestPerCPUReadsV1SplitForUsage(t *testing.T) {
	root := expand(t, "v1-split")
	const path = "/throttlelab/limits-4242/limited-0"
	acct := "sys/fs/cgroup/cpuacct" + path
	writeFile(t, root, acct+"/cpuacct.usage", "1000\n")
	writeFile(t, root, acct+"/cpuacct.usage_percpu", "300 700 \n")
	hot := false
	var got [][]uint64
	var usage []uint64
	w, err := New(Options{Root: root, ByNeed: ByNeed{Policy: TestPolicy{ObserveFn: func(s Sample) bool {
		p, u, split := s.Path, s.UsageNs, s.PerCPU
		if p == path {
			got, usage = append(got, slices.Clone(split)), append(usage, u)
		}
		return hot
	}}, PerCPU: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	g := w.groups[path]
	cu := &countingFile{CounterFile: g.counters.Usage}
	g.counters.Usage = cu
	w.Sample(0) // cold: its usage read, no split
	hot = true
	w.Sample(10 * time.Millisecond) // told hot at this one: from the next on
	writeFile(t, root, acct+"/cpuacct.usage_percpu", "400 900 \n")
	w.Sample(20 * time.Millisecond)
	if cu.n != 2 {
		t.Errorf("cpuacct.usage read %d times, want 2 (while cold)", cu.n)
	}
	if len(got) != 3 || got[0] != nil || got[1] != nil || !slices.Equal(got[2], []uint64{400, 900}) {
		t.Errorf("splits observed %v, want none, none, [400 900]", got)
	}
	if len(usage) != 3 || usage[2] != 1300 {
		t.Errorf("usage observed %v, want the split's sum (1300) at the hot sample", usage)
	}
	hot = false
	w.Sample(30 * time.Millisecond) // still hot at this one (read with the split), cold after
	w.Sample(40 * time.Millisecond)
	if cu.n != 3 || g.perCPU != nil {
		t.Errorf("cold again: cpuacct.usage read %d times (want 3), reader open: %v", cu.n, g.perCPU != nil)
	}
}

// TestPerCPUV2ThreadBound: on v2 a hot group's split (its threads' run
// time) reaches Observe while it has up to SplitMaxThreads threads; one of
// more goes without, and its reader is closed.
func TestPerCPUV2ThreadBound(t *testing.T) {
	root := expand(t, "v2-kubepods-systemd")
	const ctr = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podabcdef01_2345_4678_9abc_def012345678.slice/cri-containerd-d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4.scope"
	threads := func(n int, runNs int) {
		var b strings.Builder
		for tid := 100; tid < 100+n; tid++ {
			fmt.Fprintf(&b, "%d\n", tid)
			d := filepath.Join(root, "proc", fmt.Sprint(tid))
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, d, "schedstat", fmt.Sprintf("%d 0 1\n", runNs))
			writeFile(t, d, "stat", fmt.Sprintf("%d (w) %s\n", tid, strings.Repeat("0 ", 50)))
		}
		writeFile(t, root, "sys/fs/cgroup"+ctr+"/cgroup.threads", b.String())
	}
	threads(SplitMaxThreads, 1000)
	var splits [][]uint64
	w, err := New(Options{Root: root, ByNeed: ByNeed{Policy: TestPolicy{ObserveFn: func(s Sample) bool {
		p, split := s.Path, s.PerCPU
		if p == ctr {
			splits = append(splits, slices.Clone(split))
		}
		return true
	}}, PerCPU: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Sample(0)
	w.Sample(10 * time.Millisecond) // hot: the reader's first reading (nothing ran since it opened)
	threads(SplitMaxThreads, 2000)
	w.Sample(20 * time.Millisecond) // each thread ran 1 us on CPU 0
	threads(SplitMaxThreads+1, 3000)
	w.Sample(30 * time.Millisecond)
	w.Sample(40 * time.Millisecond)
	if len(splits) != 5 || splits[0] != nil || !slices.Equal(splits[2], []uint64{SplitMaxThreads * 1000}) || splits[3] != nil || splits[4] != nil {
		t.Errorf("splits observed %v; want none, none or zeros, [%d] (%d threads), none, none (%d threads)", splits, SplitMaxThreads*1000, SplitMaxThreads, SplitMaxThreads+1)
	}
	if g := w.groups[ctr]; g.perCPU != nil || !g.perCPUFailed {
		t.Errorf("reader open %v, given up %v; want closed and given up", g.perCPU != nil, g.perCPUFailed)
	}
}

func gateDirs(w *Watcher) []string {
	var dirs []string
	for _, gt := range w.gates {
		dirs = append(dirs, gt.dir)
	}
	return dirs
}

// TestGatesPerTopLevelGroup: groups Every picks under two top-level groups
// have a gate each (the lowest group holding them under each), not one at
// the hierarchy's root, whose usage moves with everything on the host.
func TestGatesPerTopLevelGroup(t *testing.T) {
	root := expand(t, "v2-kubepods-systemd")
	const ctr = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podabcdef01_2345_4678_9abc_def012345678.slice/cri-containerd-d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4.scope"
	const svc = "/system.slice/docker-e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5.scope"
	w, err := New(Options{Root: root, ByNeed: ByNeed{Policy: TestPolicy{
		PicksFn:  func(id Identity) bool { return id.Kind == KindContainer },
		OnGridFn: func(at time.Duration) bool { return at%(100*time.Millisecond) == 0 },
	}, Coarse: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	want := []string{filepath.Join(root, "sys/fs/cgroup", ctr), filepath.Join(root, "sys/fs/cgroup", svc)}
	if got := gateDirs(w); !slices.Equal(got, want) {
		t.Errorf("gates %v, want %v", got, want)
	}
	if w.groups[ctr].gate == nil || w.groups[svc].gate == nil || w.groups[ctr].gate == w.groups[svc].gate {
		t.Error("the two groups do not have a gate each")
	}
}

// TestPeakBasisOnTheCoarseGrid: a limited group (1 CPU, period timer at
// phase 30 ms) with an 80 ms burst over 1010-1090 ms, read only on a
// 100 ms grid while it is not hot (Options.Coarse), its cpu.stat read at
// every sample: no period boundary can be placed in a 100 ms slot, so its
// peak is the highest mean between two grid instants (0.8, basis window,
// over its 100 ms period), not an estimate of the period's (placing
// boundaries at the slots' middles gave 0.4 with basis period, below the
// period's true peak of 0.6). Hot, read every 10 ms, the same burst gives
// a peak between the period's boundaries (basis period, near 0.6).
func TestPeakBasisOnTheCoarseGrid(t *testing.T) {
	root := expand(t, "v1-split")
	const grp = "/throttlelab/limits-4242/limited-0"
	const dir = "sys/fs/cgroup/%s" + grp + "/%s"
	writeFile(t, root, fmt.Sprintf(dir, "cpu", "cpu.cfs_quota_us"), "100000\n")
	ms := time.Millisecond
	const phase = 30 * time.Millisecond
	var burst [2]time.Duration
	write := func(at time.Duration) {
		u := min(max(at-burst[0], 0), burst[1]-burst[0])
		periods := 0
		if at >= phase {
			periods = int((at-phase)/(100*ms)) + 1
		}
		writeFile(t, root, fmt.Sprintf(dir, "cpuacct", "cpuacct.usage"), fmt.Sprintf("%d\n", u))
		writeFile(t, root, fmt.Sprintf(dir, "cpu", "cpu.stat"), fmt.Sprintf("nr_periods %d\nnr_throttled 0\nthrottled_time 0\n", periods))
	}
	hot := false
	w, err := New(Options{Root: root, ByNeed: ByNeed{Policy: TestPolicy{
		PicksFn:   func(id Identity) bool { return strings.HasSuffix(id.Name, "limited-0") },
		OnGridFn:  func(at time.Duration) bool { return at%(100*ms) == 0 },
		ObserveFn: func(s Sample) bool { return hot },
	}, Coarse: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	run := func(from time.Duration) *Stats {
		for at := from; at <= from+2*time.Second; at += 10 * ms {
			write(at)
			w.Sample(at)
		}
		return find(w.Report(), grp)
	}
	burst = [2]time.Duration{1010 * ms, 1090 * ms}
	st := run(0)
	if st == nil || st.PeakPeriodCores == nil {
		t.Fatalf("no peak for the group read on the grid: %+v", st)
	}
	if st.PeakBasis != BasisWindow || st.PeakWindowUsec != 100000 || math.Abs(*st.PeakPeriodCores-0.8) > 1e-9 {
		t.Errorf("read on the grid: peak %.3f, basis %q over %d us; want 0.800 over 100 ms windows", *st.PeakPeriodCores, st.PeakBasis, st.PeakWindowUsec)
	}
	hot = true
	w.Sample(2*time.Second + 10*ms) // hot from here: read every 10 ms
	w.Report()
	burst = [2]time.Duration{3010 * ms, 3090 * ms}
	st = run(2*time.Second + 20*ms)
	if st == nil || st.PeakPeriodCores == nil || st.PeakBasis != BasisPeriod || *st.PeakPeriodCores < 0.55 || *st.PeakPeriodCores > 0.7 {
		t.Errorf("read every 10 ms: %+v; want a peak near 0.6 between the period's boundaries", st)
	}
}

// TestPerCPUSplitAfterAReadError: a hot group's split that fails to read
// once (a short read) is read again at the next sample, counted as a read
// error, and that sample's usage comes from cpuacct.usage; splitTries
// failures in a row and the group goes without a split for good.
func TestPerCPUSplitAfterAReadError(t *testing.T) {
	root := expand(t, "v1-split")
	const path = "/throttlelab/limits-4242/limited-0"
	acct := "sys/fs/cgroup/cpuacct" + path
	writeFile(t, root, acct+"/cpuacct.usage", "1000\n")
	writeFile(t, root, acct+"/cpuacct.usage_percpu", "300 700 \n")
	var got [][]uint64
	w, err := New(Options{Root: root, ByNeed: ByNeed{Policy: TestPolicy{ObserveFn: func(s Sample) bool {
		p, split := s.Path, s.PerCPU
		if p == path {
			got = append(got, slices.Clone(split))
		}
		return true
	}}, PerCPU: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	at := time.Duration(0)
	sample := func(percpu string) {
		writeFile(t, root, acct+"/cpuacct.usage_percpu", percpu)
		w.Sample(at)
		at += 10 * time.Millisecond
	}
	sample("300 700 \n") // cold at its first: hot from the next
	sample("300 700 \n")
	sample("\n") // a short read
	sample("400 900 \n")
	if len(got) != 4 || got[2] != nil || !slices.Equal(got[3], []uint64{400, 900}) {
		t.Fatalf("splits observed %v, want [300 700] at the second, none at the third, [400 900] at the fourth", got)
	}
	if w.ReadErrors() != 1 {
		t.Errorf("%d read errors counted, want 1", w.ReadErrors())
	}
	for range splitTries {
		sample("\n")
	}
	sample("500 1000 \n")
	if g := w.groups[path]; !g.perCPUFailed || got[len(got)-1] != nil {
		t.Errorf("after %d failed reads in a row the split is still read: %v", splitTries, got[len(got)-1])
	}
}
