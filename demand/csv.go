package demand

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
)

// ReadCSV reads a CSV of cumulative usage: a header line "time_ns,usage_ns",
// then one line per sample with the time (ns, any origin) and the group's
// cumulative CPU time (ns). Optional columns cpu0_ns, cpu1_ns, ... after
// them give the group's cumulative CPU time on each CPU (cpuacct.usage_percpu):
// the per-CPU split (Demand.PerCPU). Times must increase (the error names
// the line); usage that falls (a restarted counter) and gaps over cfs.MaxGap
// are cut out with a warning.
func ReadCSV(r io.Reader) (*cfs.Demand, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	var at, usage []time.Duration
	var perCPU [][]time.Duration
	ncpu := 0
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 || b[0] == '#' {
			continue
		}
		if line == 1 || (len(at) == 0 && (b[0] < '0' || b[0] > '9')) {
			n, err := csvHeader(string(b))
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			ncpu, perCPU = n, make([][]time.Duration, n)
			continue
		}
		f := bytes.Split(b, []byte(","))
		if len(f) != 2+ncpu {
			return nil, fmt.Errorf("line %d: %q: want %d values (time_ns,usage_ns and %d per-CPU)", line, b, 2+ncpu, ncpu)
		}
		var v [2]int64
		for k := range f {
			x, err := strconv.ParseInt(string(bytes.TrimSpace(f[k])), 10, 64)
			if err != nil || x < 0 {
				return nil, fmt.Errorf("line %d: %q: want non-negative integers (ns)", line, b)
			}
			if k < 2 {
				v[k] = x
			} else {
				perCPU[k-2] = append(perCPU[k-2], time.Duration(x))
			}
		}
		t, u := v[0], v[1]
		if n := len(at); n > 0 {
			if time.Duration(t) <= at[n-1] {
				return nil, fmt.Errorf("line %d: time %d ns is not after the line before (%d ns): sort the samples by time", line, t, at[n-1])
			}
		}
		at, usage = append(at, time.Duration(t)), append(usage, time.Duration(u))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	if len(at) < 2 {
		return nil, fmt.Errorf("%w: %d sample(s): want at least two lines of time_ns,usage_ns", cfs.ErrTooShort, len(at))
	}
	d := cfs.FromSamples(at, usage)
	if ncpu > 0 {
		d.PerCPU = perCPU
	}
	return d, nil
}

// csvHeader checks a CSV header and returns how many per-CPU columns it has.
func csvHeader(h string) (int, error) {
	cols := strings.Split(h, ",")
	if len(cols) < 2 || cols[0] != "time_ns" || cols[1] != "usage_ns" {
		return 0, fmt.Errorf("header %q: want time_ns,usage_ns (then optional cpu0_ns,cpu1_ns,...)", h)
	}
	for k, c := range cols[2:] {
		if c != fmt.Sprintf("cpu%d_ns", k) {
			return 0, fmt.Errorf("header %q: column %d is %q, want cpu%d_ns", h, k+3, c, k)
		}
	}
	return len(cols) - 2, nil
}

// WriteCSV writes d in the format ReadCSV reads.
func WriteCSV(w io.Writer, d *cfs.Demand) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("time_ns,usage_ns")
	for c := range d.PerCPU {
		fmt.Fprintf(bw, ",cpu%d_ns", c)
	}
	bw.WriteString("\n")
	var buf []byte
	for i := range d.At {
		buf = strconv.AppendInt(buf[:0], int64(d.At[i]), 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(d.Usage[i]), 10)
		for _, u := range d.PerCPU {
			buf = append(buf, ',')
			buf = strconv.AppendInt(buf, int64(u[i]), 10)
		}
		buf = append(buf, '\n')
		bw.Write(buf)
	}
	return bw.Flush()
}
