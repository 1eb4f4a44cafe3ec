package demand

import (
	"bytes"
	"os"
	"path/filepath"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/cgroup"
)

// maxThreadsPerCPU is the most threads a cgroup v2 group may have for its
// per-CPU split to be sampled: there it costs two reads per thread every
// 10 ms (cgroup.PerCPUReader).
const maxThreadsPerCPU = 32

// openPerCPU opens g's per-CPU reader, or returns nil where the split is
// not to be had (no cpuacct on v1, too many threads on v2): the advice then
// replays without it.
func openPerCPU(g *Group) *cgroup.PerCPUReader {
	dir := g.AcctDir
	if g.Version == "v2" {
		dir = g.CPUDir
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.threads"))
		if err != nil || bytes.Count(b, []byte("\n")) > maxThreadsPerCPU {
			return nil
		}
	}
	if dir == "" {
		return nil
	}
	r, err := cgroup.OpenPerCPU(g.Version, dir, g.root)
	if err != nil {
		return nil
	}
	return r
}

// appendPerCPU appends one reading (ns per CPU) as the samples' n-th to
// per ([cpu][sample]); a CPU that appears later starts at 0.
func appendPerCPU(per [][]time.Duration, reading []uint64, n int) [][]time.Duration {
	for len(per) < len(reading) {
		per = append(per, make([]time.Duration, n-1))
	}
	for c := range per {
		v := time.Duration(0)
		if c < len(reading) {
			v = time.Duration(reading[c])
		}
		per[c] = append(per[c], v)
	}
	return per
}

// withPerCPU is d with the per-CPU readings per when they cover every
// sample (FromSamples keeps each sample).
func withPerCPU(d *cfs.Demand, per [][]time.Duration) *cfs.Demand {
	for _, u := range per {
		if len(u) != len(d.At) {
			return d
		}
	}
	d.PerCPU = per
	return d
}
