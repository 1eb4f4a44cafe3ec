package demand

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
)

// twoCPU is 10 s of 10 ms samples: CPU 0 busy throughout, CPU 1 busy at
// half a CPU for the first 20 ms of every 100 ms (110 ms of work a period).
func twoCPU() *cfs.Demand {
	d := &cfs.Demand{PerCPU: make([][]time.Duration, 2)}
	var u, c0, c1 time.Duration
	for i := 0; i <= 1000; i++ {
		if i > 0 {
			c0 += 10 * time.Millisecond
			if (i-1)%10 < 2 {
				c1 += 5 * time.Millisecond
			}
			u = c0 + c1
		}
		d.At = append(d.At, time.Duration(i)*10*time.Millisecond)
		d.Usage = append(d.Usage, u)
		d.PerCPU[0] = append(d.PerCPU[0], c0)
		d.PerCPU[1] = append(d.PerCPU[1], c1)
	}
	return d
}

// TestPerCPUCSV: the per-CPU columns round-trip, and a bad one is named.
func TestPerCPUCSV(t *testing.T) {
	d := twoCPU()
	var b bytes.Buffer
	if err := WriteCSV(&b, d); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "time_ns,usage_ns,cpu0_ns,cpu1_ns\n") {
		t.Fatalf("header: %q", strings.SplitN(b.String(), "\n", 2)[0])
	}
	got, err := ReadCSV(&b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.PerCPU) != 2 || got.PerCPU[1][30] != d.PerCPU[1][30] || got.CPUsUsed() != 2 {
		t.Fatalf("per-CPU columns did not round-trip: %d CPUs", len(got.PerCPU))
	}
	for _, in := range []string{"time_ns,usage_ns,cpu1_ns\n0,0,0\n", "time_ns,usage_ns,cpu0_ns\n0,0\n"} {
		if _, err := ReadCSV(strings.NewReader(in)); err == nil {
			t.Errorf("%q read without error", in)
		} else {
			t.Log(err)
		}
	}
}
