package demand

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
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
	sc.Buffer(make([]byte, 256<<10), 1<<20) // reads of 256 KiB, not 4 KiB
	var at, usage []time.Duration
	if f, ok := r.(interface{ Stat() (os.FileInfo, error) }); ok {
		// A file's size bounds its lines: room for them at once rather than
		// growing (and copying) 8.64 M samples by doubling. Lines of
		// time_ns,usage_ns are 20 bytes or more.
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			n := min(fi.Size()/20+1, 1<<28)
			at, usage = make([]time.Duration, 0, n), make([]time.Duration, 0, n)
		}
	}
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
		// The values, in place: a day of 10 ms samples is 8.64 M lines,
		// and a slice and two strings a line were most of reading them.
		if bytes.Count(b, []byte(",")) != 1+ncpu {
			return nil, fmt.Errorf("line %d: %q: want %d values (time_ns,usage_ns and %d per-CPU)", line, b, 2+ncpu, ncpu)
		}
		var v [2]int64
		rest := b
		for k := range 2 + ncpu {
			f := rest
			if i := bytes.IndexByte(rest, ','); i >= 0 {
				f, rest = rest[:i], rest[i+1:]
			}
			x, ok := parseNs(f)
			if !ok {
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

// parseNs parses a non-negative decimal integer, spaces around it allowed
// (what strconv.ParseInt takes of one, without a string).
func parseNs(b []byte) (int64, bool) {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '+' {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var x int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if x > (math.MaxInt64-int64(c-'0'))/10 {
			return 0, false // overflows int64
		}
		x = x*10 + int64(c-'0')
	}
	return x, true
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
