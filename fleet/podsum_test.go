package fleet

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cfs"
)

// steady is cumulative usage at cores from time_ns origin, every step.
func steady(origin, step time.Duration, n int, cores float64) *recordedFile {
	at, use := make([]time.Duration, n), make([]time.Duration, n)
	for i := range at {
		at[i] = time.Duration(i) * step
		use[i] = time.Duration(float64(at[i]) * cores)
	}
	return &recordedFile{cfs.FromSamples(at, use), origin}
}

// TestAlignRecorded aligns containers sampled on clocks apart: over the span
// both cover, on the union of their times, each one's work counted exactly.
func TestAlignRecorded(t *testing.T) {
	app := steady(time.Second, 10*time.Millisecond, 1001, 0.5)                      // 1 s to 11 s
	proxy := steady(time.Second+5*time.Millisecond, 10*time.Millisecond, 1001, 0.2) // 1.005 s to 11.005 s
	d, err := sumAligned(alignRecorded([]*recordedFile{app, proxy}))
	if err != nil {
		t.Fatal(err)
	}
	// The overlap is 1.005 s to 11 s: 9.995 s at 0.7 cores.
	if d.Duration() != 9995*time.Millisecond || math.Abs(d.MeanCores()-0.7) > 1e-6 {
		t.Errorf("sum: %s at %.6f cores, want 9.995s at 0.7", d.Duration(), d.MeanCores())
	}
	// The union of the two 10 ms grids is a 5 ms grid.
	if len(d.At) != 2000 || d.At[1] != 5*time.Millisecond {
		t.Errorf("%d samples, second at %s: want 2000, 5ms apart", len(d.At), d.At[1])
	}
	if d.Cores != 2 {
		t.Errorf("parallelism bound %d, want 2 (one CPU each)", d.Cores)
	}
	// Times closer than 1 ms are one.
	near := steady(time.Second+200*time.Microsecond, 10*time.Millisecond, 1001, 0.2)
	if d, err := sumAligned(alignRecorded([]*recordedFile{app, near})); err != nil || len(d.At) != 1001 || math.Abs(d.MeanCores()-0.7) > 1e-6 {
		t.Errorf("clocks 0.2 ms apart: %v, %d samples at %.6f cores, want 1001 (1.0002 s, then 1.01 s to 11 s) at 0.7", err, len(d.At), d.MeanCores())
	}
	// No common span: refused, saying what to do.
	later := steady(20*time.Second, 10*time.Millisecond, 101, 0.2)
	if _, err := sumAligned(alignRecorded([]*recordedFile{app, later})); err == nil || !strings.Contains(err.Error(), "do not overlap in time") {
		t.Errorf("no overlap: %v", err)
	}
}

// sumAligned adds aligned demands up, the parallelism bounds too.
func sumAligned(al []*advise.Demand, err error) (*advise.Demand, error) {
	if err != nil {
		return nil, err
	}
	usage := make([]time.Duration, len(al[0].At))
	cores := 0
	for _, d := range al {
		cores += d.Cores
		for i, u := range d.Usage {
			usage[i] += u
		}
	}
	d := cfs.FromSamples(al[0].At, usage)
	d.Cores = cores
	return d, nil
}

// TestFirstSampleTime reads the first sample's time_ns past the header
// and comments.
func TestFirstSampleTime(t *testing.T) {
	got, err := firstSampleTime(strings.NewReader("# recorded\ntime_ns,usage_ns\n\n1764000000000000000,5\n1764000000010000000,9\n"))
	if err != nil || got != 1764000000000000000 {
		t.Errorf("%d %v", got, err)
	}
}
