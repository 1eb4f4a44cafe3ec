package demand

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/cfs/cfstest"
)

// readCSVSplit is ReadCSV as it was before it parsed lines in place (a
// slice per line, a string per value, strconv.ParseInt): the reference of
// TestReadCSVSame and of the benchmarks.
func readCSVSplit(r io.Reader) (*cfs.Demand, error) {
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

// TestReadCSVSame feeds ReadCSV and the reference reader the same inputs,
// good and bad: the same demand or the same error.
func TestReadCSVSame(t *testing.T) {
	inputs := []string{
		"time_ns,usage_ns\n0,0\n10000000,5000000\n20000000,6000000\n",
		"time_ns,usage_ns,cpu0_ns,cpu1_ns\n0,0,0,0\n10000000,5000000,2000000,3000000\n20000000,6000000,2500000,3500000\n",
		"time_ns,usage_ns\n 0 , 0 \n+10000000,5000000\n\n# a comment\n20000000,6000000\r\n",
		"time_ns,usage_ns\n0,0\n10000000,5000000,\n",
		"time_ns,usage_ns\n0,0\n10000000\n",
		"time_ns,usage_ns\n0,0\n10000000,-5\n",
		"time_ns,usage_ns\n0,0\n10000000,5e6\n",
		"time_ns,usage_ns\n0,0\n10000000,\n",
		"time_ns,usage_ns\n0,0\n10000000,9223372036854775807\n",
		"time_ns,usage_ns\n0,0\n10000000,9223372036854775808\n",
		"time_ns,usage_ns\n0,0\n10000000,99999999999999999999\n",
		"time_ns,usage_ns\n0,0\n10000000,1 2\n",
		"time_ns,usage_ns\n0,0\n10000000,,1\n",
		"time_ns,usage_ns,cpu0_ns\n0,0\n",
	}
	var rnd strings.Builder
	rnd.WriteString("time_ns,usage_ns,cpu0_ns\n")
	rng := rand.New(rand.NewPCG(5, 5))
	var u, c0 int64
	for i := range 5000 {
		d := rng.Int64N(10_000_000)
		u, c0 = u+d, c0+d/2
		fmt.Fprintf(&rnd, "%d,%d,%d\n", int64(i)*10_000_000+rng.Int64N(1_000_000), u, c0)
	}
	inputs = append(inputs, rnd.String())
	// The same lines broken where ReadCSV's pieces meet (it parses them on
	// every CPU): a time out of order, a bad value, both (the first in line
	// order wins), comments and blank lines, no newline at the end, a line
	// over the 1 MiB a line may hold, the header after comments.
	lines := strings.SplitAfter(rnd.String(), "\n")
	edit := func(f func(ls []string)) string {
		ls := append([]string(nil), lines...)
		f(ls)
		return strings.Join(ls, "")
	}
	inputs = append(inputs,
		edit(func(ls []string) { ls[2500] = "1,1,1\n" }),
		edit(func(ls []string) { ls[2501] = ls[2500] }),
		edit(func(ls []string) { ls[4000] = "x,1,1\n" }),
		edit(func(ls []string) { ls[4000] = "x,1,1\n"; ls[1000] = "1,1,1\n" }),
		edit(func(ls []string) { ls[4000] = "x,1,1\n"; ls[4500] = "1,1,1\n" }),
		edit(func(ls []string) {
			for k := 1; k < len(ls); k += 7 {
				ls[k] = "# a comment\n\n" + strings.ReplaceAll(ls[k], "\n", "\r\n")
			}
		}),
		strings.TrimSuffix(rnd.String(), "\n"),
		edit(func(ls []string) { ls[3000] = strings.Repeat("1", 2<<20) + "\n" }),
		"# made by hand\n\ntime_ns,usage_ns\n0,0\n10000000,5000000\n",
	)
	// A short input broken at every line, so that some break is the first
	// line of a piece whatever the pieces.
	short := lines[:61]
	for k := 1; k < len(short)-1; k++ {
		for _, f := range []func(ls []string){
			func(ls []string) { ls[k] = "1,1,1\n" },
			func(ls []string) { ls[k] = "x,1,1\n" },
			func(ls []string) { ls[k], ls[k+1] = "x,1,1\n", "1,1,1\n" },
			func(ls []string) { ls[k], ls[k+1] = "1,1,1\n", "x,1,1\n" },
			func(ls []string) { ls[k] = "\n" + ls[k] },
		} {
			ls := append([]string(nil), short...)
			f(ls)
			inputs = append(inputs, strings.Join(ls, ""))
		}
	}
	// Every input with a per-CPU column again without it: two columns is
	// what a sampler writes, and ReadCSV reads such lines on a path of
	// their own (fastSample), the rest as before.
	for _, in := range inputs[13:] {
		inputs = append(inputs, withoutPerCPU(in))
	}
	for i, in := range inputs {
		want, werr := readCSVSplit(strings.NewReader(in))
		for _, procs := range []int{1, 2, 3, 5, 8} {
			prev := runtime.GOMAXPROCS(procs)
			var r io.Reader = strings.NewReader(in)
			if procs == 3 {
				r = struct{ io.Reader }{r} // a pipe: read to its end first
			}
			got, err := ReadCSV(r)
			runtime.GOMAXPROCS(prev)
			if fmt.Sprint(err) != fmt.Sprint(werr) {
				t.Errorf("input %d, %d pieces: error %v, reference %v", i, procs, err, werr)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("input %d, %d pieces: demand differs from the reference's", i, procs)
			}
		}
	}
}

// withoutPerCPU drops the third of three comma-separated fields from every
// line of in (the header's cpu0_ns too), keeping line ends.
func withoutPerCPU(in string) string {
	ls := strings.SplitAfter(in, "\n")
	for k, l := range ls {
		if strings.Count(l, ",") != 2 {
			continue
		}
		body := strings.TrimRight(l, "\r\n")
		ls[k] = body[:strings.LastIndexByte(body, ',')] + l[len(body):]
	}
	return strings.Join(ls, "")
}

// day24hCSV writes a day of 10 ms samples (8.64 M lines: 5 ms bursts with
// probability 0.6 per sample over a trickle, timestamps jittered by up to
// 1 ms, cfstest.Day) to a file in dir.
func day24hCSV(tb testing.TB, dir string) string {
	at, usage := cfstest.Day(8_640_000)
	path := filepath.Join(dir, "day.csv")
	fh, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := WriteCSV(fh, cfs.FromSamples(at, usage)); err != nil {
		tb.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// BenchmarkReadCSV24h reads a day of 10 ms samples with ReadCSV and with the
// reader before it (readCSVSplit), in alternating rounds, and reports both
// and their ratio; the floor beside them is reading the file's bytes alone.
func BenchmarkReadCSV24h(b *testing.B) {
	path := day24hCSV(b, b.TempDir())
	read := func(f func(io.Reader) (*cfs.Demand, error)) time.Duration {
		fh, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer fh.Close()
		start := time.Now()
		if _, err := f(fh); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	bytesOnly := func(r io.Reader) (*cfs.Demand, error) { _, err := io.Copy(io.Discard, r); return nil, err }
	var now, before, floor time.Duration
	for range b.N {
		now += read(ReadCSV)
		before += read(readCSVSplit)
		floor += read(bytesOnly)
	}
	n := float64(b.N)
	b.ReportMetric(now.Seconds()/n, "s/read")
	b.ReportMetric(before.Seconds()/n, "s/read-before")
	b.ReportMetric(floor.Seconds()/n, "s/bytes-only")
	b.ReportMetric(float64(before)/float64(now), "before/now")
}

// TestCSVGzipStreamed: gzip-compressed samples are read as a stream (from a
// file, from memory and from a pipe), and plain ones from a pipe, into
// exactly the demand the plain text in memory gives, warnings and per-CPU
// columns included, and a wrong line is named by the same line number and
// reason.
func TestCSVGzipStreamed(t *testing.T) {
	var plain strings.Builder
	plain.WriteString("# a comment before the header\ntime_ns,usage_ns,cpu0_ns,cpu1_ns\n")
	u0, u1 := 0, 0
	for i := range 5000 {
		if i == 2500 {
			plain.WriteString("\n# a comment among the samples\n")
		}
		at := i * 10_000_000
		if i >= 4000 {
			at += 3_000_000_000 // a gap over cfs.MaxGap: a warning
		}
		u0, u1 = u0+(i*7919)%9_000_000, u1+(i*104729)%4_000_000
		fmt.Fprintf(&plain, "%d,%d,%d,%d\n", at, u0+u1, u0, u1)
	}
	bad := strings.Replace(plain.String(), "\n20000000,", "\n20000000x,", 1)
	for _, c := range []struct{ name, text string }{{"good", plain.String()}, {"bad", bad}} {
		want, wantErr := ReadCSV(strings.NewReader(c.text))
		if (c.name == "good") != (wantErr == nil) {
			t.Fatalf("%s, plain: %v", c.name, wantErr)
		}
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write([]byte(c.text))
		zw.Close()
		path := filepath.Join(t.TempDir(), "usage.csv.gz")
		if err := os.WriteFile(path, z.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		pr, pw := io.Pipe()
		go func() { pw.Write(z.Bytes()); pw.Close() }()
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		ppr, ppw := io.Pipe()
		go func() { ppw.Write([]byte(c.text)); ppw.Close() }()
		for name, r := range map[string]io.Reader{"file": fh, "memory": bytes.NewReader(z.Bytes()), "pipe": pr, "plain pipe": ppr} {
			got, err := ReadCSV(r)
			if wantErr != nil {
				if err == nil || err.Error() != wantErr.Error() {
					t.Errorf("%s, %s: error %v, want %v", c.name, name, err, wantErr)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s, %s: %v", c.name, name, err)
			}
			if !reflect.DeepEqual(got.At, want.At) || !reflect.DeepEqual(got.Usage, want.Usage) || !reflect.DeepEqual(got.PerCPU, want.PerCPU) ||
				!reflect.DeepEqual(got.Warnings, want.Warnings) || got.Excluded != want.Excluded {
				t.Errorf("%s, %s: %d samples, warnings %q; plain %d, %q", c.name, name, len(got.At), got.Warnings, len(want.At), want.Warnings)
			}
		}
		fh.Close()
		pr.Close() // a reading that stopped at an error leaves the writer waiting
		ppr.Close()
	}
}
