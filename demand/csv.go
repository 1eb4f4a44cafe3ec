package demand

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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
	if st, ok := stream(r); ok {
		return readCSVStream(st)
	}
	ra, size, rerr := rawReaderAt(r)
	// The header, and whatever precedes the first sample, in order: until
	// a sample is read, a line that does not start with a digit is a
	// header.
	sc := bufio.NewScanner(io.NewSectionReader(ra, 0, size))
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var used, last int64 // bytes the lines so far took, the last one's
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		n, tok, err := bufio.ScanLines(data, atEOF)
		used, last = used+int64(n), int64(n)
		return n, tok, err
	})
	ncpu, line, sample, err := scanHeader(sc)
	if err != nil {
		return nil, err
	}
	start := size
	if sample {
		start = used - last
	}
	// The samples in pieces of whole lines, parsed on every CPU: a day of
	// 10 ms samples is 8.64 M lines, and parsing them was a serial half
	// second before any replay could start.
	pieces, err := cutPieces(ra, start, size, max(runtime.GOMAXPROCS(0), 1))
	if err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	// Each piece's lines bound its samples: the samples are parsed straight
	// into their places in the demand's arrays, which are then closed up
	// (the places of blank lines and comments) and shifted to start at 0
	// where they are, so that a day of samples (8.64 M) is held once. It
	// was held three times over (each piece's, the joined, FromSamples'):
	// most of advise's resident memory on a day.
	var wg sync.WaitGroup
	for _, pc := range pieces {
		wg.Go(func() { pc.bound = countLines(ra, pc.off, pc.end) })
	}
	wg.Wait()
	bound := 0
	for _, pc := range pieces {
		bound += pc.bound
	}
	at, usage := make([]time.Duration, bound), make([]time.Duration, bound)
	perCPU := make([][]time.Duration, ncpu)
	for k := range perCPU {
		perCPU[k] = make([]time.Duration, bound)
	}
	base := 0
	for _, pc := range pieces {
		end := base + pc.bound
		pc.at, pc.usage = at[base:base:end], usage[base:base:end]
		pc.perCPU = make([][]time.Duration, ncpu)
		for k := range perCPU {
			pc.perCPU[k] = perCPU[k][base:base:end]
		}
		base = end
	}
	for _, pc := range pieces {
		wg.Go(func() { pc.parse(ra, ncpu) })
	}
	wg.Wait()
	// Appended in order, each piece's samples move down to where the
	// pieces before it end (memmove: a piece's place starts at or after
	// that), and no piece is overwritten before it is moved.
	at, usage = at[:0], usage[:0]
	for k := range perCPU {
		perCPU[k] = perCPU[k][:0]
	}
	for _, pc := range pieces {
		// The first error in line order: the piece's own, or its first
		// time against the pieces' before it.
		if len(pc.at) > 0 && len(at) > 0 && pc.at[0] <= at[len(at)-1] && (pc.err == nil || pc.firstLine < pc.errLine) {
			return nil, fmt.Errorf("line %d: time %d ns is not after the line before (%d ns): sort the samples by time", line+pc.firstLine, pc.at[0], at[len(at)-1])
		}
		if pc.err != nil {
			return nil, fmt.Errorf("line %d: %w", line+pc.errLine, pc.err)
		}
		at, usage = append(at, pc.at...), append(usage, pc.usage...)
		for k := range perCPU {
			perCPU[k] = append(perCPU[k], pc.perCPU[k]...)
		}
		line += pc.lines
		*pc = csvPiece{} // its samples are moved
	}
	if rerr != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, rerr)
	}
	if len(at) < 2 {
		return nil, fmt.Errorf("%w: %d sample(s): want at least two lines of time_ns,usage_ns", cfs.ErrTooShort, len(at))
	}
	d := cfs.FromSamplesInPlace(at, usage)
	if ncpu > 0 {
		d.PerCPU = perCPU
	}
	return d, nil
}

// maxLine is the longest line read, newline included.
const maxLine = 1 << 20

// stream returns what to read r from as a stream, and true, when it is
// gzip-compressed (a .csv.gz: its decompressed content) or cannot be read
// at an offset (a pipe: its content, compressed or not). A regular file or
// a reader in memory with plain text is read at offsets instead, in
// pieces on every CPU. An error of the decompression says "gzip".
func stream(r io.Reader) (io.Reader, bool) {
	var magic [2]byte
	var head io.Reader
	switch x := r.(type) {
	case interface {
		io.ReaderAt
		Size() int64
	}:
		if _, err := x.ReadAt(magic[:], 0); err != nil {
			return nil, false
		}
		head = io.NewSectionReader(x, 0, x.Size())
	default:
		if f, ok := x.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
				if _, err := f.ReadAt(magic[:], 0); err != nil {
					return nil, false
				}
				head = io.NewSectionReader(f, 0, fi.Size())
				break
			}
		}
		br := bufio.NewReaderSize(x, 64<<10)
		if b, err := br.Peek(2); err != nil || [2]byte{b[0], b[1]} != [2]byte{0x1f, 0x8b} {
			return br, true
		}
		magic, head = [2]byte{0x1f, 0x8b}, br
	}
	if magic != [2]byte{0x1f, 0x8b} {
		return nil, false
	}
	zr, err := gzip.NewReader(head)
	if err != nil {
		return gzipErr{errReader{err}}, true
	}
	return gzipErr{zr}, true
}

// gzipErr says "gzip" in the errors of its reader's decompression.
type gzipErr struct{ r io.Reader }

func (g gzipErr) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("gzip: %w", err)
	}
	return n, err
}

// scanHeader reads the header, and whatever precedes the first sample, in
// order: until a sample is read, a line that does not start with a digit
// is a header. It returns the header's CPU columns, the lines before the
// first sample, and whether sc stopped on that sample (sc.Bytes()).
func scanHeader(sc *bufio.Scanner) (ncpu, line int, sample bool, err error) {
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 || b[0] == '#' {
			continue
		}
		if line > 1 && b[0] >= '0' && b[0] <= '9' {
			return ncpu, line - 1, true, nil // the first sample: read with the rest
		}
		n, err := csvHeader(string(b))
		if err != nil {
			return 0, line, false, fmt.Errorf("line %d: %w", line, err)
		}
		ncpu = n
	}
	if err := sc.Err(); err != nil {
		return 0, line, false, fmt.Errorf("line %d: %w", line+1, err)
	}
	return ncpu, line, false, nil
}

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// readCSVStream is ReadCSV of a stream read once, line after line (the
// decompressed content of a .csv.gz, a pipe): the samples go straight into
// the demand's arrays, and the stream's bytes are not held. A day of 10 ms
// samples compressed was decompressed whole first, 254 MB read into a
// buffer that doubled as it grew: over 1 GB resident before the advice.
func readCSVStream(r io.Reader) (*cfs.Demand, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 256<<10), maxLine)
	ncpu, line, sample, err := scanHeader(sc)
	if err != nil {
		return nil, err
	}
	pc := &csvPiece{perCPU: make([][]time.Duration, ncpu)}
	if sample {
		pc.scan(sc, ncpu, sc.Bytes())
	}
	if pc.err != nil {
		return nil, fmt.Errorf("line %d: %w", line+pc.errLine, pc.err)
	}
	if len(pc.at) < 2 {
		return nil, fmt.Errorf("%w: %d sample(s): want at least two lines of time_ns,usage_ns", cfs.ErrTooShort, len(pc.at))
	}
	d := cfs.FromSamplesInPlace(pc.at, pc.usage)
	if ncpu > 0 {
		d.PerCPU = pc.perCPU
	}
	return d, nil
}

// rawReaderAt is r as an io.ReaderAt and its size: a regular file or a
// reader in memory as it is (ReadCSV streams anything else), anything else
// read to its end first (then the error that ended the reading is returned
// beside what it read).
func rawReaderAt(r io.Reader) (io.ReaderAt, int64, error) {
	switch x := r.(type) {
	case *os.File:
		if fi, err := x.Stat(); err == nil && fi.Mode().IsRegular() {
			return x, fi.Size(), nil
		}
	case interface {
		io.ReaderAt
		Size() int64
	}:
		return x, x.Size(), nil
	}
	b, err := io.ReadAll(r)
	return bytes.NewReader(b), int64(len(b)), err
}

// csvPiece is a run of whole lines of the samples, parsed on its own: its
// samples, how many lines it holds, the line (counted from its start) of
// its first sample, and the first error in it and its line. Its samples
// are appended to at, usage and perCPU as given (their room in the
// demand's arrays).
type csvPiece struct {
	off, end         int64
	bound            int // its lines, at least: room for its samples
	at, usage        []time.Duration
	perCPU           [][]time.Duration
	lines, firstLine int
	err              error
	errLine          int
}

// cutPieces cuts the bytes from start to size of ra into up to n pieces of
// about equal size, each starting at a line's start.
func cutPieces(ra io.ReaderAt, start, size int64, n int) ([]*csvPiece, error) {
	var out []*csvPiece
	off := start
	for k := 1; k <= n && off < size; k++ {
		end := size
		if k < n {
			var err error
			if end, err = lineStart(ra, max(start+(size-start)*int64(k)/int64(n), off+1), size); err != nil {
				return nil, err
			}
		}
		out = append(out, &csvPiece{off: off, end: end})
		off = end
	}
	return out, nil
}

// lineStart returns the start of the first line that starts at pos or
// after it (size if none).
func lineStart(ra io.ReaderAt, pos, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for p := pos - 1; p < size; p += int64(len(buf)) {
		n, err := ra.ReadAt(buf, p)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return p + int64(i) + 1, nil
		}
		if err != nil && err != io.EOF {
			return 0, err
		}
	}
	return size, nil
}

// parse reads the piece's lines, every one a sample (or blank, or a
// comment), with ncpu per-CPU columns, into the room pc holds for them.
func (pc *csvPiece) parse(ra io.ReaderAt, ncpu int) {
	sc := bufio.NewScanner(io.NewSectionReader(ra, pc.off, pc.end-pc.off))
	sc.Buffer(make([]byte, 256<<10), maxLine) // reads of 256 KiB, not 4 KiB
	pc.scan(sc, ncpu, nil)
}

// scan parses first (a line already read, or nil) and the lines sc gives
// after it, as parse does.
func (pc *csvPiece) scan(sc *bufio.Scanner, ncpu int, first []byte) {
	for first != nil || sc.Scan() {
		b := first
		if b == nil {
			b = sc.Bytes()
		}
		first = nil
		pc.lines++
		if !pc.sample(b, ncpu) {
			return
		}
	}
	if err := sc.Err(); err != nil {
		pc.err, pc.errLine = err, pc.lines+1
	}
}

// sample parses one line into pc's samples; false when it is wrong (pc.err
// says how).
func (pc *csvPiece) sample(line []byte, ncpu int) bool {
	fail := func(err error) bool { pc.err, pc.errLine = err, pc.lines; return false }
	t, u, ok := fastSample(line, ncpu)
	if !ok {
		b := bytes.TrimSpace(line)
		if len(b) == 0 || b[0] == '#' {
			return true
		}
		// The values, in place: a slice and two strings a line were
		// most of reading them.
		if bytes.Count(b, []byte(",")) != 1+ncpu {
			return fail(fmt.Errorf("%q: want %d values (time_ns,usage_ns and %d per-CPU)", b, 2+ncpu, ncpu))
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
				return fail(fmt.Errorf("%q: want non-negative integers (ns)", b))
			}
			if k < 2 {
				v[k] = x
			} else {
				pc.perCPU[k-2] = append(pc.perCPU[k-2], time.Duration(x))
			}
		}
		t, u = time.Duration(v[0]), time.Duration(v[1])
	}
	if k := len(pc.at); k > 0 && t <= pc.at[k-1] {
		return fail(fmt.Errorf("time %d ns is not after the line before (%d ns): sort the samples by time", t, pc.at[k-1]))
	}
	if len(pc.at) == 0 {
		pc.firstLine = pc.lines
	}
	pc.at, pc.usage = append(pc.at, t), append(pc.usage, u)
	return true
}

// fastSample parses a line that is exactly time_ns,usage_ns (ncpu 0) in
// digits alone, up to 18 of them each (no overflow): what a sampler
// writes, nearly every line of a day. Anything else (spaces, signs,
// comments, per-CPU columns, errors) is not ok, and left to the general
// reading, which says what is wrong.
func fastSample(b []byte, ncpu int) (t, u time.Duration, ok bool) {
	if ncpu != 0 {
		return 0, 0, false
	}
	i, x := 0, int64(0)
	for ; i < len(b) && i < 18 && b[i] >= '0' && b[i] <= '9'; i++ {
		x = x*10 + int64(b[i]-'0')
	}
	if i == 0 || i >= len(b) || b[i] != ',' {
		return 0, 0, false
	}
	t = time.Duration(x)
	b = b[i+1:]
	i, x = 0, 0
	for ; i < len(b) && i < 18 && b[i] >= '0' && b[i] <= '9'; i++ {
		x = x*10 + int64(b[i]-'0')
	}
	if i == 0 || i != len(b) {
		return 0, 0, false
	}
	return t, time.Duration(x), true
}

// countLines counts the lines from off to end of ra (its newlines, and
// one for a last line without): the most samples they hold. A read that
// fails ends the count; the parse meets the error.
func countLines(ra io.ReaderAt, off, end int64) int {
	buf := make([]byte, 256<<10)
	n := 1
	for off < end {
		k, err := ra.ReadAt(buf[:min(int64(len(buf)), end-off)], off)
		n += bytes.Count(buf[:k], []byte("\n"))
		off += int64(k)
		if err != nil || k == 0 {
			break
		}
	}
	return n
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
		if !utf8.ValidString(h) || strings.ContainsFunc(h, func(r rune) bool { return r < ' ' && r != '\t' }) {
			return 0, fmt.Errorf("not text (binary data): want a CSV with the header time_ns,usage_ns (plain, or compressed with gzip)")
		}
		if len(h) > 80 {
			h = h[:80] + "..."
		}
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
