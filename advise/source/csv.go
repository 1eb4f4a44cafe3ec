package source

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
)

// ReadCSV reads a CSV of cumulative usage: a header line "time_ns,usage_ns",
// then one line per sample with the time (ns, any origin) and the group's
// cumulative CPU time (ns). Times must increase (the error names the line);
// usage that falls (a restarted counter) and gaps over cfs.MaxGap are cut out
// with a warning.
func ReadCSV(r io.Reader) (*cfs.Demand, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	var at, usage []time.Duration
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 || b[0] == '#' {
			continue
		}
		if line == 1 || (len(at) == 0 && (b[0] < '0' || b[0] > '9')) {
			if string(b) != "time_ns,usage_ns" {
				return nil, fmt.Errorf("line %d: header %q: want time_ns,usage_ns", line, b)
			}
			continue
		}
		c := bytes.IndexByte(b, ',')
		if c < 0 {
			return nil, fmt.Errorf("line %d: %q: want time_ns,usage_ns", line, b)
		}
		t, err1 := strconv.ParseInt(string(b[:c]), 10, 64)
		u, err2 := strconv.ParseInt(string(bytes.TrimSpace(b[c+1:])), 10, 64)
		if err := errors.Join(err1, err2); err != nil || t < 0 || u < 0 {
			return nil, fmt.Errorf("line %d: %q: want two non-negative integers (ns)", line, b)
		}
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
	return cfs.FromSamples(at, usage), nil
}

// WriteCSV writes d in the format ReadCSV reads.
func WriteCSV(w io.Writer, d *cfs.Demand) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("time_ns,usage_ns\n")
	var buf []byte
	for i := range d.At {
		buf = strconv.AppendInt(buf[:0], int64(d.At[i]), 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(d.Usage[i]), 10)
		buf = append(buf, '\n')
		bw.Write(buf)
	}
	return bw.Flush()
}
