package agent

import (
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
)

// The per-CPU split of hot containers: while a container is hot (sampled
// every SampleEvery), its CPU time on each CPU is read beside its usage
// (cgroup.PerCPUReader: v1's cpuacct.usage_percpu, one pread; on v2 its
// threads' run time by the CPU each last ran on), so that its chunks are
// replayed with the kernel's per-CPU runtime slices (cfs.Demand.PerCPU),
// as advise --cgroup replays them, and its view says how many CPUs it ran
// on. A chunk's samples taken while it was cold (the coarse grid) have no
// reading and take the chunk's split; a chunk with no reading at all
// replays as before, without one.

// perCPU is one container's per-CPU reader, opened while it is hot.
type perCPU struct {
	hot    bool // the container was hot at its last sample
	r      *cgroup.PerCPUReader
	failed bool // opening or reading failed: not tried again
	buf    []uint64
}

// readPerCPU reads c's per-CPU split at agent time t into its summary's
// pending readings, before the sample at t is added (AddCounts), when c
// was hot at its last sample; a container gone cold has its reader
// closed.
func (a *Agent) readPerCPU(c *container, t time.Duration) {
	p := &c.cpu
	if !p.hot || p.failed {
		p.close()
		return
	}
	if p.r == nil {
		dir := a.acctDir(c.path)
		if dir == "" {
			p.failed = true
			return
		}
		r, err := cgroup.OpenPerCPU(a.w.Source().Version, dir, a.cfg.Root)
		if err != nil {
			p.failed = true
			a.cfg.Logger.Debug("per-CPU split", "cgroup", c.path, "err", err)
			return
		}
		p.r = r
	}
	var err error
	if p.buf, err = p.r.Read(p.buf); err != nil {
		p.failed = true
		p.close()
		return
	}
	c.mu.Lock()
	c.sum.NotePerCPU(t, p.buf)
	c.mu.Unlock()
}

func (p *perCPU) close() {
	if p.r != nil {
		p.r.Close()
		p.r = nil
	}
}

// acctDir is the directory of the group at cgroup path p in the hierarchy
// that counts its usage (cpuacct on v1, the group on v2); "" where that
// hierarchy does not hold p.
func (a *Agent) acctDir(p string) string {
	m := a.w.Source().Acct
	if m == nil {
		return ""
	}
	rel := p
	if m.Root != "/" {
		if p != m.Root && !strings.HasPrefix(p, m.Root+"/") {
			return ""
		}
		rel = strings.TrimPrefix(p, m.Root)
	}
	return filepath.Join(a.cfg.Root, m.MountPoint, filepath.FromSlash(path.Clean("/"+rel)))
}
