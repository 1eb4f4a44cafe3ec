package cgroup_test

// A real-kernel benchmark: it makes cgroups on this host, so run it under
// the host lock (flock /tmp/throttlelab-host.lock go test ./cgroup -run X
// -bench CounterFiles).

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
)

// BenchmarkCounterFiles is what one read of each counter file a sampler
// reads costs on this host's kernel, for a new group limited to 1 CPU:
// cpu.stat and, on a v1 host, cpuacct.usage and cpuacct.usage_percpu (the
// agent's per-CPU split of a hot container); and where a v2 hierarchy is
// mounted, a v2 group's cpu.stat (whose read flushes the hierarchy's
// per-CPU statistics first). Each is read with one pread (PreadFile),
// alternating, in the same run, with a regular file of the same content:
// FILE-ns is a read's time, FILE/regular its ratio to the regular file's.
// At 100 samples a second, 200 containers read one such file each cost
// FILE-ns x 2e4 ns a second: FILE-ns / 500 percent of a core.
func BenchmarkCounterFiles(b *testing.B) {
	l := cgrouptest.Require(b)
	g := cgrouptest.LimitedGroup(b, 100000, 100000)
	files := map[string]string{"cpu.stat": filepath.Join(g.Dir, "cpu.stat")}
	if g.Version == "v1" {
		if acct, ok := l.V1["cpuacct"]; ok {
			dir := filepath.Join(acct.MountPoint, filepath.Base(g.Dir))
			if acct.MountPoint != l.V1["cpu"].MountPoint {
				if err := os.Mkdir(dir, 0o755); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { os.Remove(dir) })
			}
			files["cpuacct.usage"] = filepath.Join(dir, "cpuacct.usage")
			files["cpuacct.usage_percpu"] = filepath.Join(dir, "cpuacct.usage_percpu")
		}
		if l.Unified != nil {
			dir := filepath.Join(l.Unified.MountPoint, filepath.Base(g.Dir))
			if err := os.Mkdir(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { os.Remove(dir) })
			files["v2-cpu.stat"] = filepath.Join(dir, "cpu.stat")
		}
	}
	for name, p := range files {
		b.Run(name, func(b *testing.B) {
			content, err := os.ReadFile(p)
			if err != nil {
				b.Fatal(err)
			}
			plain := filepath.Join(b.TempDir(), "plain")
			if err := os.WriteFile(plain, content, 0o644); err != nil {
				b.Fatal(err)
			}
			kf, err := cgroup.OpenPreadFile(p, 4096)
			if err != nil {
				b.Fatal(err)
			}
			defer kf.Close()
			pf, err := cgroup.OpenPreadFile(plain, 4096)
			if err != nil {
				b.Fatal(err)
			}
			defer pf.Close()
			var kernel, regular time.Duration
			for range b.N {
				t0 := time.Now()
				if _, err := kf.Read(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, err := pf.Read(); err != nil {
					b.Fatal(err)
				}
				regular += time.Since(t1)
				kernel += t1.Sub(t0)
			}
			b.ReportMetric(float64(kernel)/float64(b.N), fmt.Sprintf("%s-ns", name))
			b.ReportMetric(float64(kernel)/float64(regular), fmt.Sprintf("%s/regular", name))
		})
	}
}
