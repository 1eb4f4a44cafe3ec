package agent

import (
	"encoding/binary"
	"time"
)

// The per-CPU split of hot containers: while a container is hot (sampled
// every SampleEvery), the watcher reads its CPU time on each CPU beside
// its usage (watch.ByNeed.PerCPU, cgroup.PerCPUReader: v1's
// cpuacct.usage_percpu, one pread that gives the usage too; on v2 its
// threads' run time by the CPU each last ran on), and observe notes it in
// the summary (ContainerSummary.NotePerCPU) before the sample, so that its
// chunks are replayed with the kernel's per-CPU runtime slices
// (cfs.Demand.PerCPU), as advise --cgroup replays them, and its view says
// how many CPUs it ran on. A chunk's samples taken while it was cold (the
// coarse grid) have no reading and take the chunk's split; a chunk with no
// reading at all replays as before, without one. Config.NoPerCPU leaves
// it out.

// perCPUReading is a container's cumulative CPU time on each CPU (ns) at
// agent time at.
type perCPUReading struct {
	at  time.Duration
	cum []uint64
}

// maxPending bounds the per-CPU readings kept for samples not added yet.
const maxPending = 256

// NotePerCPU records the container's cumulative CPU time on each CPU
// (cgroup.PerCPUReader) at agent time at, the time of a sample given to
// AddCounts or Add (before it is added). A chunk with readings is replayed
// with the kernel's per-CPU runtime slices over their split
// (cfs.Demand.PerCPU); its intervals without one take the chunk's split.
func (s *ContainerSummary) NotePerCPU(at time.Duration, cum []uint64) {
	if len(s.pending) >= maxPending {
		s.spare = append(s.spare, s.pending[0].cum)
		s.pending = append(s.pending[:0], s.pending[1:]...)
	}
	var buf []uint64
	if n := len(s.spare); n > 0 {
		buf, s.spare = s.spare[n-1][:0], s.spare[:n-1]
	}
	s.pending = append(s.pending, perCPUReading{at: at, cum: append(buf, cum...)})
}

// takePerCPU copies the per-CPU reading of the sample at agent time at
// into cur (empty if there is none), dropping older readings.
func (s *ContainerSummary) takePerCPU(at time.Duration) {
	s.cur = s.cur[:0]
	i := 0
	for ; i < len(s.pending) && s.pending[i].at <= at; i++ {
		if s.pending[i].at == at {
			s.cur = append(s.cur, s.pending[i].cum...)
		}
		s.spare = append(s.spare, s.pending[i].cum)
	}
	if i > 0 {
		n := copy(s.pending, s.pending[i:])
		clear(s.pending[n:])
		s.pending = s.pending[:n]
	}
}

// addPerCPU appends the per-CPU use of the interval ending at agent time
// at to the open chunk's split: a row of one uvarint (us) per CPU, the use
// on each CPU since the last reading (maybe samples before: a row holds
// only a split, cfs.Demand.Split takes its shares), or zeros where at has
// no reading (such an interval takes the chunk's split). Rows start at the
// chunk's first reading, with zero rows for the samples before it.
func (s *ContainerSummary) addPerCPU(at time.Duration) {
	s.takePerCPU(at)
	if len(s.cur) == 0 {
		if s.cpuRows > 0 {
			s.cpuDeltas = appendZeros(s.cpuDeltas, len(s.lastCPU))
			s.cpuRows++
		}
		return
	}
	if len(s.cur) != len(s.lastCPU) { // the first reading, or the CPUs changed
		s.lastCPU = append(s.lastCPU[:0], s.cur...)
		s.cpuDeltas, s.cpuRows = s.cpuDeltas[:0], 0
	}
	for s.cpuRows < s.n { // the samples before: no split
		s.cpuDeltas = appendZeros(s.cpuDeltas, len(s.cur))
		s.cpuRows++
	}
	for c, v := range s.cur {
		d := v - min(v, s.lastCPU[c]) // a counter that fell: nothing
		s.cpuDeltas = binary.AppendUvarint(s.cpuDeltas, d/1000)
	}
	s.cpuRows++
	s.lastCPU = append(s.lastCPU[:0], s.cur...)
}

// firstPerCPU takes the reading of a chunk's first sample (at), which
// starts the next interval's deltas.
func (s *ContainerSummary) firstPerCPU(at time.Duration) {
	s.takePerCPU(at)
	if len(s.cur) > 0 {
		s.lastCPU = append(s.lastCPU[:0], s.cur...)
	}
}

func appendZeros(b []byte, n int) []byte {
	for range n {
		b = append(b, 0)
	}
	return b
}
