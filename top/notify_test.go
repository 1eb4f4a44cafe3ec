package top

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
)

// BenchmarkDirEventsIdle is what looking for new groups costs Run at each
// sample when none appeared (a read of the inotify descriptor that finds
// nothing), against, in the same run, the cheapest read the sampler does
// per group (one pread of a counter file kept open). cpu-%-at-10ms is the
// share of one core the look costs at 100 samples a second; look/pread,
// its time over one group's read.
func BenchmarkDirEventsIdle(b *testing.B) {
	d, err := newDirEvents()
	if err != nil {
		b.Skip(err)
	}
	defer d.close()
	dir := b.TempDir()
	d.watch(dir)
	p := filepath.Join(dir, "cpuacct.usage")
	if err := os.WriteFile(p, []byte("123456789\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	d.changed() // the file's creation
	f, err := cgroup.OpenCounterFile(p, 64)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var look, pread time.Duration
	for range b.N {
		t0 := time.Now()
		if d.changed() {
			b.Fatal("an event from nowhere")
		}
		t1 := time.Now()
		if _, err := f.Read(); err != nil {
			b.Fatal(err)
		}
		pread += time.Since(t1)
		look += t1.Sub(t0)
	}
	b.ReportMetric(float64(look)/float64(b.N)*100/1e9*100, "cpu-%-at-10ms")
	b.ReportMetric(float64(look)/float64(pread), "look/pread")
}
