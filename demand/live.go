package demand

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/watch"
)

// Group is a live cgroup to sample.
type Group struct {
	// Path is the group's path as /proc/PID/cgroup shows it.
	Path string
	// Name is how its owner knows it (watch.Identify).
	Name string
	// CPUDir is its directory in the cpu controller's hierarchy, AcctDir
	// where its usage is counted (the same on v2, cpuacct on v1).
	CPUDir, AcctDir string
	// Version is "v1" or "v2".
	Version string
	// Pid, if not 0, is the process the group was found by: sampling stops
	// with an error if it exits.
	Pid  int
	root string
}

// ErrNoCPUController marks a group whose cpu controller is not enabled:
// its quota and throttling cannot be read.
var ErrNoCPUController = errors.New("no cpu controller")

// group makes a Group of path p in the hierarchies of s.
func group(root string, s *watch.Source, p string) (*Group, error) {
	if s.CPU == nil {
		return nil, fmt.Errorf("group %s: %w on this host (no hierarchy has it): feed its usage as a CSV instead", p, ErrNoCPUController)
	}
	dirOf := func(m *cgroup.MountInfo) string { return filepath.Join(root, cgroup.GroupDir(*m, p)) }
	g := &Group{Path: p, Name: watch.Identify(p, watch.ReadPodNames(root)).Name, CPUDir: dirOf(s.CPU), Version: s.Version, root: root}
	if s.Acct != nil {
		g.AcctDir = dirOf(s.Acct)
	}
	if _, err := os.Stat(g.CPUDir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("group %s: no such cgroup (%s): check the path (as in /proc/PID/cgroup)", p, g.CPUDir)
		}
		return nil, fmt.Errorf("group %s: %w", p, err)
	}
	quotaFile := "cpu.max"
	if g.Version == "v1" {
		quotaFile = "cpu.cfs_quota_us"
	}
	if p != "/" {
		if _, err := os.Stat(filepath.Join(g.CPUDir, quotaFile)); err != nil {
			return nil, fmt.Errorf("group %s: %w (no %s): enable it in the parent's cgroup.subtree_control, or feed its usage as a CSV", p, ErrNoCPUController, quotaFile)
		}
	}
	return g, nil
}

// FindPath finds a group by its path as /proc/PID/cgroup shows it, or by
// its directory under a cgroup mount.
func FindPath(root, p string) (*Group, error) {
	s, err := watch.FindSource(root)
	if err != nil {
		return nil, err
	}
	for _, m := range []*cgroup.MountInfo{s.CPU, s.Acct} {
		if m == nil {
			continue
		}
		mp := filepath.Join(root, m.MountPoint)
		if rel, ok := strings.CutPrefix(filepath.Clean(p), mp); ok && (rel == "" || rel[0] == '/') {
			p = path.Join(m.Root, filepath.ToSlash(rel))
			break
		}
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("cgroup %q: give a path as in /proc/PID/cgroup (starting with /) or a directory under a cgroup mount", p)
	}
	return group(root, s, path.Clean(p))
}

// FindPid finds the cpu cgroup of process pid.
func FindPid(root string, pid int) (*Group, error) {
	b, err := os.ReadFile(filepath.Join(root, "proc", strconv.Itoa(pid), "cgroup"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("pid %d: no such process", pid)
		}
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	lines, err := cgroup.ParseProcCgroup(strings.NewReader(string(b)))
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	l, err := cgroup.ReadLayout(root)
	if err != nil {
		return nil, err
	}
	_, p, err := l.ProcessPath(lines, "cpu")
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w: /proc/%d/cgroup names no group with it (%v)", pid, ErrNoCPUController, pid, err)
	}
	s, err := watch.FindSource(root)
	if err != nil {
		return nil, err
	}
	g, err := group(root, s, p)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	g.Pid = pid
	return g, nil
}

// FindPod finds a Kubernetes pod's group under the kubelet's kubepods tree
// (cgroupfs or systemd naming, v1 or v2) by its UID or NAMESPACE/NAME (names
// come from the kubelet's log directories, as watch reads them).
func FindPod(root, pod string) (*Group, error) {
	s, err := watch.FindSource(root)
	if err != nil {
		return nil, err
	}
	refs, err := watch.Discover(root, s)
	if err != nil {
		return nil, err
	}
	names := watch.ReadPodNames(root)
	want := strings.ToLower(strings.ReplaceAll(pod, "_", "-"))
	var found []string
	for _, r := range refs {
		id := watch.Identify(r.Path, names)
		if id.Kind != watch.KindPod {
			continue
		}
		if id.PodUID == want || (id.Namespace != "" && id.Namespace+"/"+id.Pod == pod) {
			found = append(found, r.Path)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("pod %s: no such pod under kubepods on this node: give NAMESPACE/NAME (as in /var/log/pods) or the pod's UID", pod)
	case 1:
		return group(root, s, found[0])
	}
	return nil, fmt.Errorf("pod %s: %d groups match (%s): give the pod's UID", pod, len(found), strings.Join(found, ", "))
}

// Stat reads the group's cpu.stat (bandwidth counters; usage on v2).
func (g *Group) Stat() (cgroup.CPUCounters, error) {
	b, err := os.ReadFile(filepath.Join(g.CPUDir, "cpu.stat"))
	if err != nil {
		return cgroup.CPUCounters{}, fmt.Errorf("group %s: %w", g.Path, err)
	}
	return cgroup.ParseCPUCounters(b)
}

// LimitMilli reads the group's own quota as millicores (0: no limit).
func (g *Group) LimitMilli() int64 {
	l, err := cgroup.ReadGroupCPU(g.CPUDir, g.Version)
	if err != nil || l.LimitCores <= 0 {
		return 0
	}
	return int64(l.LimitCores*1000 + 0.5)
}

// Sampler reads one group's cumulative usage, keeping its files open
// (cgroup.UsageCounter): one pread and no allocation per sample, and a
// second on cgroup v1 for the throttling counters of a group with a limit.
type Sampler struct {
	c      *cgroup.UsageCounter
	limits bool // the group has a quota: its nr_throttled is read too
}

// NewSampler opens the group's usage counter (and cpu.stat where the
// group has a quota: demand sampled under a limit that throttles is
// reconstructed from it, see Backlog).
func NewSampler(g *Group) (*Sampler, error) {
	acct, cpu := g.AcctDir, ""
	if g.Version == "v2" {
		acct = g.CPUDir
	}
	limits := g.CPUDir != "" && g.LimitMilli() > 0
	if limits && g.Version == "v1" {
		cpu = g.CPUDir
	}
	c, err := cgroup.OpenUsage(g.Version, cpu, acct)
	if err != nil {
		return nil, fmt.Errorf("group %s: %w", g.Path, err)
	}
	return &Sampler{c: c, limits: limits}, nil
}

// Read returns the cumulative usage now.
func (s *Sampler) Read() (time.Duration, error) {
	u, _, err := s.ReadCounts()
	return u, err
}

// ReadCounts returns the cumulative usage and nr_throttled now (0 for a
// group without a quota).
func (s *Sampler) ReadCounts() (time.Duration, uint64, error) {
	r, err := s.c.ReadUsage(s.limits)
	return r.Usage(), r.ThrottledPeriods, err
}

// Close closes the counter.
func (s *Sampler) Close() error { return s.c.Close() }

// Sample samples g every 10 ms for duration (or until ctx ends, keeping
// what it has), from cgroup's one sampling loop (cgroup.Loop: clock_nanosleep
// to absolute instants; instants it came too late for are counted and
// noted in the demand's warnings), and cpu.stat before and after.
// progress, if not nil, is called about every 100 ms.
func Sample(ctx context.Context, g *Group, duration time.Duration, progress func(done time.Duration)) (*cfs.Demand, cgroup.CPUStat, error) {
	s, err := NewSampler(g)
	if err != nil {
		return nil, cgroup.CPUStat{}, err
	}
	defer s.Close()
	before, err := g.Stat()
	if err != nil {
		return nil, cgroup.CPUStat{}, err
	}
	n := int(duration/(10*time.Millisecond)) + 1
	at, usage, thr := make([]time.Duration, 0, n), make([]time.Duration, 0, n), make([]uint64, 0, n)
	pc := openPerCPU(g)
	defer func() {
		if pc != nil {
			pc.Close()
		}
	}()
	var perCPU [][]time.Duration
	var pcBuf []uint64
	var missed int64
	demand := func() *cfs.Demand {
		return noteMissed(underLimit(g, withPerCPU(cfs.FromSamples(at, usage), perCPU), thr), missed, len(at))
	}
	procDir := filepath.Join(g.root, "proc", strconv.Itoa(g.Pid))
	var out *cfs.Demand
	var outStat cgroup.CPUStat
	var outErr error
	i := 0
	cgroup.Loop(ctx, 10*time.Millisecond, func(now time.Duration, m int64) bool {
		missed = m
		u, th, err := s.ReadCounts()
		if err != nil {
			if len(at) >= 2 && groupGone(err) {
				// Removed while sampled (its pod replaced, say): advice
				// from what was sampled before, as for a pid that exited;
				// the samples are kept, not lost with the group.
				out = demand()
				out.Warnings = append(out.Warnings, fmt.Sprintf("group %s was removed after %s of sampling: the advice rests on the samples before that", g.Path, at[len(at)-1].Round(time.Millisecond)))
				return false
			}
			outErr = fmt.Errorf("group %s: reading usage after %s: %w (was the group removed?)", g.Path, now.Round(time.Millisecond), err)
			return false
		}
		at, usage, thr = append(at, now), append(usage, u), append(thr, th)
		if pc != nil {
			if pcBuf, err = pc.Read(pcBuf); err == nil {
				perCPU = appendPerCPU(perCPU, pcBuf, len(at))
			} else {
				pc.Close()
				pc, perCPU = nil, nil // the advice goes on without the split
			}
		}
		if now >= duration {
			return false
		}
		if i%10 == 0 {
			if progress != nil {
				progress(now)
			}
			if g.Pid != 0 {
				if _, err := os.Stat(procDir); err != nil {
					// Advice from what was sampled while it ran; the
					// warning widens the intervals.
					out = demand()
					out.Warnings = append(out.Warnings, fmt.Sprintf("pid %d exited after %s of sampling: the advice rests on the samples before that (sample its cgroup %s to keep going)", g.Pid, now.Round(time.Millisecond), g.Path))
					if after, err := g.Stat(); err == nil {
						outStat = after.CPUStat.Sub(before.CPUStat)
					}
					return false
				}
			}
		}
		i++
		return true
	})
	switch {
	case outErr != nil:
		return nil, cgroup.CPUStat{}, outErr
	case out != nil:
		return out, outStat, nil
	case ctx.Err() != nil:
		return demand(), cgroup.CPUStat{}, ctx.Err()
	}
	after, err := g.Stat()
	if err != nil {
		return nil, cgroup.CPUStat{}, err
	}
	return demand(), after.CPUStat.Sub(before.CPUStat), nil
}

// noteMissed warns when the sampler skipped instants (it came late): the
// time between two samples is then replayed as one step, and a burst in it
// as its mean.
func noteMissed(d *cfs.Demand, missed int64, samples int) *cfs.Demand {
	if missed > 0 {
		d.Warnings = append(d.Warnings, fmt.Sprintf("%d of %d sampling instants were skipped (the sampler came late): bursts shorter than its gaps read as their mean", missed, int64(samples)+missed))
	}
	return d
}

// underLimit is d, sampled from g with nr_throttled thr at each sample,
// reconstructed where g's limit throttled it (Reconstruct), with a warning
// saying so (warnings widen the intervals).
func underLimit(g *Group, d *cfs.Demand, thr []uint64) *cfs.Demand {
	if len(thr) != len(d.At) || len(thr) == 0 || thr[len(thr)-1] == thr[0] {
		return d
	}
	period := 100 * time.Millisecond
	if l, err := cgroup.ReadGroupCPU(g.CPUDir, g.Version); err == nil && l.PeriodUsec > 0 {
		period = time.Duration(l.PeriodUsec) * time.Microsecond
	}
	closed := advise.ClosedLoopWarning(d, thr)
	d = cfs.ReconstructNoted(d, thr, period)
	if closed != "" {
		d.Warnings = append(d.Warnings, closed)
	}
	return d
}

// groupGone reports whether a read failed because its cgroup was removed:
// an open file of a removed group reads ENODEV, a path of one ENOENT.
func groupGone(err error) bool {
	return errors.Is(err, syscall.ENODEV) || errors.Is(err, fs.ErrNotExist)
}
