package record

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/throttlelab/throttlelab/cgroup"
)

// InstanceGroup is the cgroup (and usage.csv column) of instance in run
// index: "r003-limited-1".
func InstanceGroup(index int, instance string) string {
	return fmt.Sprintf("r%03d-%s", index, instance)
}

// NeighbourGroup is the cgroup (and usage.csv column) of neighbour name in
// run index: "r003-n-burst".
func NeighbourGroup(index int, name string) string { return InstanceGroup(index, "n-"+name) }

// IsNeighbourGroup reports whether group is neighbour name's group
// (NeighbourGroup) in some run.
func IsNeighbourGroup(group, name string) bool {
	return GroupInstance(group) != group && GroupInstance(group) == "n-"+name
}

// GroupInstance turns a group name back into the name it was made for
// ("r003-limited-1" is "limited-1", "r003-n-burst" is "n-burst"); a name not
// made by InstanceGroup is returned as it is.
func GroupInstance(group string) string {
	if len(group) > 5 && group[0] == 'r' && group[4] == '-' {
		if _, err := strconv.Atoi(group[1:4]); err == nil {
			return group[5:]
		}
	}
	return group
}

// RunWriter writes one run's directory for a backend: the group names, the
// usage.csv and throttled.csv samples, the request records, the latency
// histogram, and the usage figures of the run record. A backend starts its
// groups, drives the load, hands each CPU sample to Sample and each group's
// cpu.stat to Assemble. A RunWriter with no directory ("") keeps the samples
// in memory and writes nothing: what the simulator's callers that need only
// the figures (map, advise) use.
//
// Sample may be called from one goroutine other than the one that made the
// writer, as long as CloseUsage is called after the last Sample returned.
type RunWriter struct {
	dir     string
	index   int
	groups  []string
	nInst   int
	cols    columns
	files   []io.WriteCloser // usage.csv and throttled.csv
	created []io.Closer      // the files Create made, for CloseFiles
	u, t    *bufio.Writer
}

// NewRunWriter returns the writer of run index into dir ("" for none).
func NewRunWriter(dir string, index int) *RunWriter {
	return &RunWriter{dir: dir, index: index}
}

// Dir is the run's directory ("" in memory).
func (w *RunWriter) Dir() string { return w.dir }

// AddInstance names instance's group, in the order its samples are given.
// Instances come before neighbours.
func (w *RunWriter) AddInstance(instance string) string {
	if w.nInst != len(w.groups) {
		panic("record: RunWriter.AddInstance after AddNeighbour")
	}
	g := InstanceGroup(w.index, instance)
	w.groups = append(w.groups, g)
	w.nInst++
	return g
}

// AddNeighbour names neighbour name's group, after the instances'.
func (w *RunWriter) AddNeighbour(name string) string {
	g := NeighbourGroup(w.index, name)
	w.groups = append(w.groups, g)
	return g
}

// Groups are the run's group names: instances, then neighbours.
func (w *RunWriter) Groups() []string { return w.groups }

// Create creates one of the run's files (requests.csv, a burst
// neighbour's output), which CloseFiles closes. In memory it returns nil
// and no error: loadgen takes a nil writer as "keep no records".
func (w *RunWriter) Create(name string) (io.Writer, error) {
	if w.dir == "" {
		return nil, nil
	}
	f, err := os.Create(filepath.Join(w.dir, name))
	if err != nil {
		return nil, err
	}
	w.created = append(w.created, f)
	return f, nil
}

// CloseFiles closes the files Create made, returning the first error; a
// backend calls it when what writes them has stopped, and on every path.
func (w *RunWriter) CloseFiles() error {
	var err error
	for _, f := range w.created {
		if e := f.Close(); err == nil {
			err = e
		}
	}
	w.created = nil
	return err
}

// StartUsage opens usage.csv and throttled.csv and writes their headers:
// t_ns, then one column per group named so far.
func (w *RunWriter) StartUsage() error {
	w.cols = columns{}
	if w.dir == "" {
		return nil
	}
	for _, name := range []string{UsageFile, ThrottledFile} {
		f, err := os.Create(filepath.Join(w.dir, name))
		if err != nil {
			w.CloseUsage()
			return err
		}
		w.files = append(w.files, f)
	}
	w.u, w.t = bufio.NewWriterSize(w.files[0], 256<<10), bufio.NewWriterSize(w.files[1], 256<<10)
	for _, bw := range []*bufio.Writer{w.u, w.t} {
		bw.WriteString("t_ns")
		for _, n := range w.groups {
			bw.WriteString("," + n)
		}
		bw.WriteString("\n")
	}
	return nil
}

// Sample records one sample of every group (cumulative usage in ns and
// throttled periods, in the groups' order) and keeps its figures for
// Assemble and Held (not s: the caller may use its slices again).
func (w *RunWriter) Sample(s cgroup.UsageSample) {
	w.cols.add(s)
	if w.u == nil {
		return
	}
	// Each line is formatted in the writer's own free room (a copy less
	// when it fits, as nearly every line does).
	ub, tb := strconv.AppendInt(w.u.AvailableBuffer(), int64(s.At), 10), strconv.AppendInt(w.t.AvailableBuffer(), int64(s.At), 10)
	for i := range w.groups {
		ub = strconv.AppendInt(append(ub, ','), int64(s.Usage[i]), 10)
		tb = strconv.AppendUint(append(tb, ','), s.Throttled[i], 10)
	}
	w.u.Write(append(ub, '\n'))
	w.t.Write(append(tb, '\n'))
}

// LastSampleAt is the time of the last sample, and false before the first.
func (w *RunWriter) LastSampleAt() (time.Duration, bool) {
	if len(w.cols.at) == 0 {
		return 0, false
	}
	return w.cols.at[len(w.cols.at)-1], true
}

// Samples are the samples given so far (their figures; Missed is not kept).
func (w *RunWriter) Samples() []cgroup.UsageSample { return w.cols.samples() }

// CloseUsage flushes and closes usage.csv and throttled.csv.
func (w *RunWriter) CloseUsage() error {
	var err error
	for _, bw := range []*bufio.Writer{w.u, w.t} {
		if bw != nil {
			if e := bw.Flush(); err == nil {
				err = e
			}
		}
	}
	for _, f := range w.files {
		if e := f.Close(); err == nil {
			err = e
		}
	}
	w.u, w.t, w.files = nil, nil, nil
	return err
}

// WriteSamples writes every sample at once (a backend that collects them
// elsewhere, like the kubernetes one).
func (w *RunWriter) WriteSamples(samples []cgroup.UsageSample) error {
	if err := w.StartUsage(); err != nil {
		return err
	}
	for _, s := range samples {
		w.Sample(s)
	}
	return w.CloseUsage()
}

// Assemble fills the run record's per-group figures: stats[i] is group i's
// cpu.stat over the measurement and sets[i] its CPU settings, in the
// groups' order. Instances go to CPUStat, Total and Usage (by instance,
// rs.Instances in order), neighbours to Neighbours and NeighbourUsage (by
// group name).
func (w *RunWriter) Assemble(rs *Run, stats []cgroup.CPUStat, sets []cgroup.Settings) {
	if rs.CPUStat == nil {
		rs.CPUStat = map[string]cgroup.CPUStat{}
	}
	if rs.Usage == nil {
		rs.Usage = map[string]UsageStats{}
	}
	for i, st := range stats {
		u := w.cols.usageStats(i, sets[i])
		if i < w.nInst {
			rs.CPUStat[rs.Instances[i]] = st
			rs.Total = rs.Total.Add(st)
			rs.Usage[rs.Instances[i]] = u
			continue
		}
		if rs.Neighbours == nil {
			rs.Neighbours = map[string]cgroup.CPUStat{}
		}
		if rs.NeighbourUsage == nil {
			rs.NeighbourUsage = map[string]UsageStats{}
		}
		rs.Neighbours[w.groups[i]] = st
		rs.NeighbourUsage[w.groups[i]] = u
	}
}

// WriteHist writes the run's latency histogram (latency.hdr).
func (w *RunWriter) WriteHist(h *hdrhistogram.Histogram, start time.Time) error {
	if w.dir == "" {
		return nil
	}
	return WriteHist(filepath.Join(w.dir, HistFile), h, start)
}
