package advise_test

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/cfs/cfstest"
	"github.com/throttlelab/throttlelab/demand"
	"github.com/throttlelab/throttlelab/testenv"
)

// BenchmarkAdviseDay is advise --csv on a day of 10 ms samples (8.64 M
// rows, written to a file in the benchmark, not committed): the existing
// day (flat: cfstest.Day, Poisson 5 ms bursts at a steady 0.3 cores) and a
// day with a daily cycle and bursts (cycle: cfstest.DayCycle). Each round
// reads the CSV alone (demand.ReadCSV, the reference) and then reads and
// advises it as the command does; it reports both in seconds of wall and
// of the process's CPU time (steadier than wall on a shared machine),
// their ratios (the advice's cost in readings of the CSV), the bytes
// allocated by the advice, reading included, and the peak of the heap
// while reading and advising (live and not yet collected: what the
// process's resident size follows), against the peak while reading alone.
func BenchmarkAdviseDay(b *testing.B) {
	for _, c := range []struct {
		name string
		gen  func(int) (at, usage []time.Duration)
	}{{"flat", cfstest.Day}, {"cycle", cfstest.DayCycle}} {
		b.Run(c.name, func(b *testing.B) {
			path := writeDayCSV(b, c.gen)
			var read, adv, readCPU, advCPU time.Duration
			var alloc, readPeak, advPeak uint64
			for range b.N {
				runtime.GC()
				stop := watchHeap()
				start, cpu := time.Now(), testenv.ProcessCPU(b)
				readDayCSV(b, path)
				read, readCPU = read+time.Since(start), readCPU+testenv.ProcessCPU(b)-cpu
				readPeak = max(readPeak, stop())
				runtime.GC()
				stop = watchHeap()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				before := ms.TotalAlloc
				start, cpu = time.Now(), testenv.ProcessCPU(b)
				d := readDayCSV(b, path)
				if _, err := advise.Advise(d, advise.Request{}, advise.Sampled{Source: path}); err != nil {
					b.Fatal(err)
				}
				adv, advCPU = adv+time.Since(start), advCPU+testenv.ProcessCPU(b)-cpu
				advPeak = max(advPeak, stop())
				runtime.ReadMemStats(&ms)
				alloc += ms.TotalAlloc - before
			}
			n := float64(b.N)
			b.ReportMetric(read.Seconds()/n, "s/read")
			b.ReportMetric(adv.Seconds()/n, "s/advise")
			b.ReportMetric(float64(adv)/float64(read), "advise/read")
			b.ReportMetric(readCPU.Seconds()/n, "cpu-s/read")
			b.ReportMetric(advCPU.Seconds()/n, "cpu-s/advise")
			b.ReportMetric(float64(advCPU)/float64(readCPU), "cpu-advise/read")
			b.ReportMetric(float64(alloc)/n/(1<<20), "MiB-alloc/advise")
			b.ReportMetric(float64(readPeak)/(1<<20), "MiB-peak-heap/read")
			b.ReportMetric(float64(advPeak)/(1<<20), "MiB-peak-heap/advise")
			b.ReportMetric(float64(advPeak)/float64(readPeak), "peak-heap-advise/read")
		})
	}
}

// watchHeap samples the heap's size (objects, live or not yet collected,
// and the free room of their spans: the runtime's HeapInuse) every
// millisecond until the function it returns is called, which returns the
// highest size seen, the size at that call included.
func watchHeap() func() uint64 {
	ms := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	size := func() uint64 {
		metrics.Read(ms)
		return ms[0].Value.Uint64() + ms[1].Value.Uint64()
	}
	done, peak := make(chan struct{}), make(chan uint64)
	go func() {
		p := size()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				p = max(p, size())
			case <-done:
				peak <- max(p, size())
				return
			}
		}
	}()
	return func() uint64 { close(done); return <-peak }
}

// writeDayCSV writes the samples gen makes for a day (8.64 M) to a CSV in a
// temporary directory and returns its path.
func writeDayCSV(b *testing.B, gen func(int) (at, usage []time.Duration)) string {
	b.Helper()
	at, usage := gen(8_640_000)
	path := filepath.Join(b.TempDir(), "day.csv")
	fh, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := demand.WriteCSV(fh, cfs.FromSamples(at, usage)); err != nil {
		b.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// readDayCSV reads the CSV at path as advise --csv does.
func readDayCSV(b *testing.B, path string) *advise.Demand {
	b.Helper()
	fh, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer fh.Close()
	d, err := demand.ReadCSV(fh)
	if err != nil {
		b.Fatal(err)
	}
	return d
}
