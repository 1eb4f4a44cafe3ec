package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
)

// fakePodNode lays out a cgroup v2 node (systemd driver) of n pods of one
// container each: the containers' cpu.max is ctrMax, the pods' podMax (""
// leaves the pods' directories without files, as fakeNode200 does). It
// returns the root, the containers' cpu.stat paths and the pods'
// directories.
func fakePodNode(b *testing.B, n int, podMax, ctrMax string) (string, []string, map[string]bool) {
	root := b.TempDir()
	w := func(p, s string) {
		p = filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	group := func(dir, max string) {
		w(dir+"cgroup.procs", "4001\n")
		w(dir+"cpu.max", max+"\n")
		w(dir+"cpu.max.burst", "0\n")
		w(dir+"cpu.weight", "10\n")
		w(dir+"cpu.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
		w(dir+"cpu.stat", "usage_usec 0\nuser_usec 0\nsystem_usec 0\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n")
	}
	w("proc/self/mountinfo", "25 23 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n")
	w("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n")
	var stats []string
	pods := map[string]bool{}
	for i := range n {
		uid := fmt.Sprintf("%08x_2345_4678_9abc_def012345678", i)
		id := strings.Repeat(fmt.Sprintf("%08x", i), 8)
		pod := "sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uid + ".slice/"
		if podMax != "" {
			group(pod, podMax)
		}
		pods[filepath.Join(root, pod)] = true
		dir := pod + "cri-containerd-" + id + ".scope/"
		group(dir, ctrMax)
		stats = append(stats, filepath.Join(root, dir, "cpu.stat"))
	}
	return root, stats, pods
}

// BenchmarkAgentPods runs the agent on a fake node of 50 one-container
// pods for a minute of 10 ms rounds (reports every 10 s), three ways in
// the same run: the pods' directories without files (ref), the pods with
// the quota the kubelet gives them without pod-level resources (the sum
// of their containers' limits: plain), and pods with a pod-level limit
// over containers without one (podlevel). plain/ref is what pods without
// a pod-level limit cost (1: nothing); podlevel/ref what summarising them
// costs. pod-reads/round counts the reads of the pods' files per round.
func BenchmarkAgentPods(b *testing.B) {
	const n, rounds = 50, 6001
	run := func(podMax, ctrMax string) (time.Duration, int64, int) {
		root, paths, pods := fakePodNode(b, n, podMax, ctrMax)
		var reads atomic.Int64
		a, err := New(Config{Root: root, Node: "bench", MaxMilli: 4000,
			open: func(p string, size int) (cgroup.CounterFile, error) {
				f, err := cgroup.OpenCounterFile(p, size)
				if err != nil || !pods[filepath.Dir(p)] {
					return f, err
				}
				return countingFile{f, &reads}, nil
			}})
		if err != nil {
			b.Fatal(err)
		}
		defer a.Close()
		write := demandWriter(b, paths)
		var writing, total time.Duration
		for k := range rounds {
			t0 := time.Now()
			write()
			t1 := time.Now()
			at := time.Duration(k) * 10 * time.Millisecond
			a.Sample(at)
			if k%1000 == 0 {
				if err := a.Report(at); err != nil {
					b.Fatal(err)
				}
			}
			writing += t1.Sub(t0)
			total += time.Since(t0)
		}
		a.Drain()
		return total - writing, reads.Load(), len(a.Views())
	}
	var ref, plain, podlevel time.Duration
	var plainReads, podReads int64
	for range b.N {
		d, _, v := run("", "100000 100000")
		if v != n {
			b.Fatalf("ref: %d entries, want %d", v, n)
		}
		ref += d
		d, r, v := run("100000 100000", "100000 100000")
		if v != n {
			b.Fatalf("plain: %d entries, want %d (no pod's)", v, n)
		}
		plain, plainReads = plain+d, plainReads+r
		d, r, v = run("50000 100000", "max 100000")
		if v != 2*n {
			b.Fatalf("podlevel: %d entries, want %d (each pod's too)", v, 2*n)
		}
		podlevel, podReads = podlevel+d, podReads+r
	}
	b.ReportMetric(float64(plain)/float64(ref), "plain/ref")
	b.ReportMetric(float64(podlevel)/float64(ref), "podlevel/ref")
	b.ReportMetric(float64(plainReads)/float64(b.N*rounds), "plain-pod-reads/round")
	b.ReportMetric(float64(podReads)/float64(b.N*rounds), "podlevel-pod-reads/round")
}
