package record

import (
	"strconv"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/stats"
	"github.com/throttlelab/throttlelab/workload"
)

// Held is what a report takes of a run, as the backend that wrote the
// run's requests.csv, usage.csv and throttled.csv held it in memory: a
// report made at once need not read back what was just written (the
// simulator's runs). The values are those the files give back.
type Held struct {
	// Requests are requests.csv's records, compact, in its order.
	Requests []Request
	// Latency is LatencySample of the records.
	Latency *stats.Sample
	// Groups name the sampled groups (usage.csv's columns), At the
	// samples' times; Usage[i] and Throttled[i] are group i's cumulative
	// CPU time and throttled periods at each.
	Groups    []string
	At        []time.Duration
	Usage     [][]time.Duration
	Throttled [][]uint64
}

// Request is one request as a report sees it.
type Request struct {
	// Latency from the intended send time; OK unless it failed.
	Latency time.Duration
	OK      bool
	// Stall is server wall - CPU - queue, -1 where the server gave no timing.
	Stall time.Duration
	// Tile is the tile's index (row-major), -1 for other requests.
	Tile int32
}

// CompactRequest is what a report keeps of rec.
func CompactRequest(rec *loadgen.Record) Request {
	r := Request{Latency: rec.Latency, OK: rec.Err == "", Stall: -1, Tile: -1}
	if rec.ServerCPU >= 0 && rec.ServerWall >= 0 {
		r.Stall = max(rec.ServerWall-rec.ServerCPU-max(rec.ServerQueue, 0), 0)
	}
	if x, y, ok := strings.Cut(rec.Tile, ","); ok {
		tx, err1 := strconv.Atoi(x)
		ty, err2 := strconv.Atoi(y)
		if t := (workload.Tile{X: tx, Y: ty}); err1 == nil && err2 == nil && t.Valid() {
			r.Tile = int32(t.Index())
		}
	}
	return r
}

// CompactRequests is CompactRequest of every record, in order.
func CompactRequests(recs []loadgen.Record) []Request {
	out := make([]Request, len(recs))
	for i := range recs {
		out[i] = CompactRequest(&recs[i])
	}
	return out
}

// compactLatencySample is LatencySample of the records reqs were made of.
func compactLatencySample(reqs []Request) *stats.Sample {
	v := make([]float64, 0, len(reqs))
	for i := range reqs {
		if reqs[i].OK {
			v = append(v, float64(reqs[i].Latency)/1e6)
		}
	}
	return stats.NewSample(v)
}

// Held returns what the writer wrote of the run, with reqs, the records
// written to requests.csv made compact (CompactRequest): the samples as
// columns. Nil for a writer in memory.
func (w *RunWriter) Held(reqs []Request) *Held {
	if w.dir == "" {
		return nil
	}
	// The columns as kept: the writer takes no more samples once its run
	// is handed over.
	h := &Held{Requests: reqs, Latency: compactLatencySample(reqs), Groups: w.groups, At: w.cols.at}
	for i := range w.groups {
		h.Usage, h.Throttled = append(h.Usage, w.cols.column(i)), append(h.Throttled, w.cols.throttled(i))
	}
	return h
}
