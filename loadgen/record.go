package loadgen

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Record is one request, whatever became of it. Times are offsets from the start
// of the load.
type Record struct {
	// Seq numbers requests in the order their targets were picked.
	Seq int64
	// Intended is when the request was due: its schedule time in open loop, its
	// send time in closed loop.
	Intended time.Duration
	// Start is when it was really sent.
	Start time.Duration
	// Latency runs from Intended to the end of the response, so a request that
	// had to wait to be sent counts that wait (no coordinated omission).
	Latency  time.Duration
	Target   int
	Instance string
	Status   int
	Bytes    int64
	// Err is empty on success, else an error kind (timeout, connect, status,
	// bad_tile, canceled, other).
	Err string
	// Server timing from Server-Timing; -1 where absent.
	ServerQueue, ServerCPU, ServerWall time.Duration
	// Tile is "x,y" for tile requests.
	Tile string
	// Step is the ramp step (0 outside ramps); Worker the worker or source.
	Step, Worker int
	// Waited is set on an open-loop send that could not go out when it was due
	// because the in-flight limit was reached (or, with one slot, the request
	// before was still running).
	Waited bool
	// Throttled is how long the request's thread was throttled (simulated
	// runs only: a real server cannot see it; -1 there).
	Throttled time.Duration
}

// csvHeader names the columns of requests.csv. Durations are in nanoseconds.
const csvHeader = "seq,intended_ns,start_ns,latency_ns,target,instance,status,bytes,error,server_queue_ns,server_cpu_ns,server_wall_ns,tile,step,worker,waited,throttled_ns\n"

// csvHeaderV1 is the header before throttled_ns: such files still read.
const csvHeaderV1 = "seq,intended_ns,start_ns,latency_ns,target,instance,status,bytes,error,server_queue_ns,server_cpu_ns,server_wall_ns,tile,step,worker,waited\n"

func (r *Record) appendCSV(b []byte) []byte {
	b = strconv.AppendInt(b, r.Seq, 10)
	for _, v := range []int64{int64(r.Intended), int64(r.Start), int64(r.Latency), int64(r.Target)} {
		b = append(b, ',')
		b = strconv.AppendInt(b, v, 10)
	}
	b = append(b, ',')
	b = appendCSVString(b, r.Instance)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, r.Bytes, 10)
	b = append(b, ',')
	b = append(b, r.Err...)
	for _, v := range []time.Duration{r.ServerQueue, r.ServerCPU, r.ServerWall} {
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(v), 10)
	}
	b = append(b, ',', '"')
	b = append(b, r.Tile...)
	b = append(b, '"', ',')
	b = strconv.AppendInt(b, int64(r.Step), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.Worker), 10)
	if r.Waited {
		b = append(b, ",1,"...)
	} else {
		b = append(b, ",0,"...)
	}
	b = strconv.AppendInt(b, int64(r.Throttled), 10)
	return append(b, '\n')
}

// appendCSVString quotes s if it needs it.
func appendCSVString(b []byte, s string) []byte {
	need := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == ',' || c == '"' || c == '\n' || c == '\r' {
			need = true
			break
		}
	}
	if !need {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

// newHist returns a latency histogram in microseconds, from 1 us to 1 hour, with
// three significant digits.
func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
}

func recordHist(h *hdrhistogram.Histogram, d time.Duration) {
	us := int64(d / time.Microsecond)
	if us < 1 {
		us = 1
	}
	if max := h.HighestTrackableValue(); us > max {
		us = max
	}
	h.RecordValue(us)
}

// recorder collects records from all workers: it writes each to the CSV as it
// arrives (nothing is held back, so an interrupted load keeps what it measured)
// and keeps what the summary needs.
type recorder struct {
	mu        sync.Mutex
	w         *bufio.Writer
	buf       []byte
	writeErr  error
	all       *hdrhistogram.Histogram
	steps     map[int]*stepAcc
	errors    map[string]int64
	instances map[string]int64
	// identity of each request by Seq, for the same-instance rate.
	ident    []int32
	identIDs map[string]int32
	n, ok    int64
	late     int64
	maxLate  time.Duration
	first    time.Duration
	last     time.Duration
}

type stepAcc struct {
	workers    int
	hist       *hdrhistogram.Histogram
	n, ok      int64
	start, end time.Duration
}

func newRecorder(w io.Writer) (*recorder, error) {
	r := &recorder{all: newHist(), steps: map[int]*stepAcc{}, errors: map[string]int64{}, instances: map[string]int64{}, identIDs: map[string]int32{}, first: -1}
	if w != nil {
		r.w = bufio.NewWriterSize(w, 64<<10)
		if _, err := r.w.WriteString(csvHeader); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *recorder) add(rec *Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w != nil && r.writeErr == nil {
		r.buf = rec.appendCSV(r.buf[:0])
		_, r.writeErr = r.w.Write(r.buf)
	}
	r.n++
	if rec.Err == "" {
		r.ok++
		recordHist(r.all, rec.Latency)
	} else {
		r.errors[rec.Err]++
	}
	if rec.Waited {
		r.late++
	}
	r.maxLate = max(r.maxLate, rec.Start-rec.Intended)
	id := rec.Instance
	if id == "" {
		id = "target:" + strconv.Itoa(rec.Target)
	}
	if rec.Instance != "" {
		r.instances[rec.Instance]++
	}
	num, seen := r.identIDs[id]
	if !seen {
		num = int32(len(r.identIDs))
		r.identIDs[id] = num
	}
	for int64(len(r.ident)) <= rec.Seq {
		r.ident = append(r.ident, -1)
	}
	r.ident[rec.Seq] = num
	if r.first < 0 || rec.Intended < r.first {
		r.first = rec.Intended
	}
	r.last = max(r.last, rec.Intended+rec.Latency)
	s := r.steps[rec.Step]
	if s == nil {
		s = &stepAcc{hist: newHist(), start: rec.Intended}
		r.steps[rec.Step] = s
	}
	s.n++
	s.start = min(s.start, rec.Intended)
	s.end = max(s.end, rec.Intended+rec.Latency)
	if rec.Err == "" {
		s.ok++
		recordHist(s.hist, rec.Latency)
	}
}

// flush writes out buffered records.
func (r *recorder) flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w == nil {
		return nil
	}
	if err := r.w.Flush(); err != nil && r.writeErr == nil {
		r.writeErr = err
	}
	return r.writeErr
}

// sameInstanceRate is the fraction of consecutive requests (by Seq) that went to
// the same instance.
func (r *recorder) sameInstanceRate() float64 {
	same, pairs := 0, 0
	for i := 1; i < len(r.ident); i++ {
		if r.ident[i] < 0 || r.ident[i-1] < 0 {
			continue
		}
		pairs++
		if r.ident[i] == r.ident[i-1] {
			same++
		}
	}
	if pairs == 0 {
		return 0
	}
	return float64(same) / float64(pairs)
}

// WriteHistogram writes h in the HdrHistogram log format (values in microseconds).
func WriteHistogram(w io.Writer, h *hdrhistogram.Histogram, start time.Time) error {
	lw := hdrhistogram.NewHistogramLogWriter(w)
	if err := lw.OutputLogFormatVersion(); err != nil {
		return err
	}
	if err := lw.OutputStartTime(start.UnixMilli()); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w, "#[Latency in microseconds, from the intended send time]"); err != nil {
		return err
	}
	if err := lw.OutputLegend(); err != nil {
		return err
	}
	return lw.OutputIntervalHistogram(h)
}

// ReadRecords parses a requests.csv written by a load (the inverse of its
// writer), so that reports, benchmarks and tests read records one way.
func ReadRecords(r io.Reader) ([]Record, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("requests.csv: %w", err)
	}
	header = slices.Clone(header)
	got := strings.Join(header, ",") + "\n"
	if got != csvHeader && got != csvHeaderV1 {
		return nil, fmt.Errorf("requests.csv: header %q is not %q", strings.TrimSpace(got), strings.TrimSpace(csvHeader))
	}
	withThrottled := got == csvHeader
	var out []Record
	for line := 2; ; line++ {
		f, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("requests.csv: %w", err)
		}
		var n [12]int64
		for i, col := range []int{0, 1, 2, 3, 4, 6, 7, 9, 10, 11, 13, 14} {
			if n[i], err = strconv.ParseInt(f[col], 10, 64); err != nil {
				return nil, fmt.Errorf("requests.csv line %d: %s: %w", line, header[col], err)
			}
		}
		rec := Record{
			Seq: n[0], Intended: time.Duration(n[1]), Start: time.Duration(n[2]), Latency: time.Duration(n[3]),
			Target: int(n[4]), Instance: f[5], Status: int(n[5]), Bytes: n[6], Err: f[8],
			ServerQueue: time.Duration(n[7]), ServerCPU: time.Duration(n[8]), ServerWall: time.Duration(n[9]),
			Tile: f[12], Step: int(n[10]), Worker: int(n[11]), Waited: f[15] == "1", Throttled: -1,
		}
		if withThrottled {
			v, err := strconv.ParseInt(f[16], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("requests.csv line %d: throttled_ns: %w", line, err)
			}
			rec.Throttled = time.Duration(v)
		}
		out = append(out, rec)
	}
}
