package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/runtimes"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// BenchmarkRuntimeCostPerSample compares, in one run, what reading a
// container's runtime costs the agent with what its sampling costs: one
// sample of the fake node (the reference), the check each report makes
// per container when nothing changed (cgroup.procs and one link), and a
// full read (runtimes.ForAdvice of a real Go process, made at discovery and
// on exec). Reported per sample of one container, with the check made once
// per report (Interval/SampleEvery samples): check/sample is its share of
// the sampling's cost.
func BenchmarkRuntimeCostPerSample(b *testing.B) {
	goPID := startChild(b, "gofmt", "GOMAXPROCS=3")
	root := watchtest.FakeRoot(b, "v2-kubepods-systemd")
	var group string
	groups := 0
	filepath.WalkDir(filepath.Join(root, "sys/fs/cgroup"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), "cri-containerd-") {
			groups++
			if group == "" {
				group = p
			}
		}
		return nil
	})
	if err := os.WriteFile(filepath.Join(group, "cgroup.procs"), []byte(strconv.Itoa(goPID)+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Symlink("/proc/"+strconv.Itoa(goPID), filepath.Join(root, "proc", strconv.Itoa(goPID))); err != nil {
		b.Fatal(err)
	}
	a, err := New(Config{Root: root, Node: "node-1", MaxMilli: 2000,
		Summary: SummaryConfig{Window: 20 * time.Second, Block: 5 * time.Second, Chunk: time.Second},
		Targets: []NamedTarget{{"throttled=0.01", advise.Target{MaxThrottled: 0.01}}}})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	at := time.Duration(0)
	for i := 0; i < 200; i++ {
		at += 10 * time.Millisecond
		a.Sample(at)
	}
	if err := a.Report(at); err != nil {
		b.Fatal(err)
	}
	cgPath := strings.TrimPrefix(group, filepath.Join(root, "sys/fs/cgroup"))
	old := a.readRuntime(cgPath, nil)
	if old.facts == nil {
		b.Fatalf("the runtime of %s was not read: %s", cgPath, old.warning)
	}
	// Timed by hand, each b.N times in the same run: a testing.Benchmark
	// nested in a benchmark waits on the benchmark lock this one holds.
	timed := func(f func()) float64 {
		t0 := time.Now()
		for i := 0; i < b.N; i++ {
			f()
		}
		return float64(time.Since(t0).Nanoseconds()) / float64(b.N)
	}
	b.ResetTimer()
	sampleOp := timed(func() { at += 10 * time.Millisecond; a.Sample(at) })
	checkNs := timed(func() {
		if a.readRuntime(cgPath, old) != old {
			b.Fatal("read again with nothing changed")
		}
	})
	readNs := timed(func() { runtimes.ForAdvice(root, []int{goPID}) })
	perReport := float64(a.cfg.Interval / a.cfg.SampleEvery)
	sampleNs := sampleOp / float64(groups) // one container's share of a sample
	b.ReportMetric(sampleNs, "sample-ns/container")
	b.ReportMetric(checkNs, "check-ns/report")
	b.ReportMetric(readNs, "read-ns/exec")
	b.ReportMetric(checkNs/perReport/sampleNs, "check/sample")
	b.ReportMetric(readNs/sampleNs, "read/sample")
}
