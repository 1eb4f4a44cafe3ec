package watch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/throttlelab/throttlelab/cgroup"
)

// Source says which cgroup hierarchy holds a host's CPU accounting, and so
// which tree top walks.
type Source struct {
	// Mode is the host's layout: v1, v2 or hybrid.
	Mode cgroup.Mode
	// Version is "v1" or "v2": the kind of files read.
	Version string
	// CPU is the hierarchy of the cpu controller (limits, throttling): the v1
	// cpu mount or the v2 unified mount. Nil when no hierarchy has it; groups
	// then show usage only.
	CPU *cgroup.MountInfo
	// Acct is where usage is read: the v1 cpuacct mount (the same as CPU when
	// they are mounted together, "cpu,cpuacct"), or the v2 unified mount.
	Acct *cgroup.MountInfo
	// PSI is the v2 mount whose groups' cpu.pressure is read: the unified
	// mount on v2, and on a hybrid host too (PSI is kept per v2 group even
	// where the cpu controller is on v1: a group's pressure is then its v2
	// group of the same path, when there is one). Nil without a v2 mount.
	PSI *cgroup.MountInfo
}

// Limits reports whether the source has the cpu controller: quotas, weights
// and throttling counters.
func (s *Source) Limits() bool { return s.CPU != nil }

// FindSource reads the mount table under root and picks the hierarchy to
// watch: the one with the cpu controller (v1 cpu with cpuacct, joined or
// split; or v2). Without a cpu controller anywhere it falls back to the v1
// cpuacct hierarchy, then to v2, whose cpu.stat always counts usage. On a
// hybrid host with the cpu controller in v1 the v2 tree is not watched: its
// groups are systemd's mirror of the same units, without limits.
func FindSource(root string) (*Source, error) {
	l, err := cgroup.ReadLayout(root)
	if err != nil {
		return nil, err
	}
	s := &Source{Mode: l.Mode, PSI: l.Unified}
	switch l.CPUVersion() {
	case "v1":
		cpu := l.V1["cpu"]
		s.Version, s.CPU = "v1", &cpu
		if a, ok := l.V1["cpuacct"]; ok {
			s.Acct = &a
		}
	case "v2":
		s.Version, s.CPU, s.Acct = "v2", l.Unified, l.Unified
	default:
		if a, ok := l.V1["cpuacct"]; ok {
			s.Version, s.Acct = "v1", &a
		} else if l.Unified != nil {
			s.Version, s.Acct = "v2", l.Unified
		} else {
			return nil, errors.New("no cgroup hierarchy counts CPU use here (no cpu or cpuacct controller, no cgroup2): nothing to watch")
		}
	}
	return s, nil
}

// Ref is one cgroup found by Discover.
type Ref struct {
	// Path is the group's path as /proc/PID/cgroup shows it ("/" for the root,
	// "/kubepods/burstable/pod.../...").
	Path string
	// CPUDir is its directory in the cpu controller's hierarchy ("" when that
	// hierarchy has no such group, or there is no cpu controller).
	CPUDir string
	// AcctDir is its directory in the hierarchy that counts usage: cpuacct on
	// v1 ("" when absent), the group itself on v2.
	AcctDir string
	// Err is set when the group's directory could not be listed.
	Err error
}

// Discover lists every group of the source under root, sorted by path. On v1
// with cpu and cpuacct mounted apart it joins the two trees by path: a group
// in either is listed once, with the directories it has.
func Discover(root string, s *Source) ([]Ref, error) {
	refs := map[string]*Ref{}
	walk := func(m *cgroup.MountInfo, set func(r *Ref, dir string)) error {
		base := filepath.Join(root, m.MountPoint)
		return filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == base {
					return fmt.Errorf("listing the cgroups under %s: %w", base, err)
				}
				if errors.Is(err, fs.ErrNotExist) {
					return nil // removed while walking
				}
			}
			if d != nil && !d.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(base, p)
			cg := path.Join(m.Root, filepath.ToSlash(rel))
			r := refs[cg]
			if r == nil {
				r = &Ref{Path: cg}
				refs[cg] = r
			}
			set(r, p)
			if err != nil {
				r.Err = err
				return fs.SkipDir
			}
			return nil
		})
	}
	if s.CPU != nil {
		if err := walk(s.CPU, func(r *Ref, dir string) { r.CPUDir = dir }); err != nil {
			return nil, err
		}
	}
	if s.Acct != nil {
		if s.CPU != nil && s.Acct.MountPoint == s.CPU.MountPoint {
			for _, r := range refs {
				r.AcctDir = r.CPUDir
			}
		} else if err := walk(s.Acct, func(r *Ref, dir string) { r.AcctDir = dir }); err != nil {
			return nil, err
		}
	}
	out := make([]Ref, 0, len(refs))
	for _, r := range refs {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// exists reports whether a directory is still there.
func exists(dir string) bool {
	_, err := os.Stat(dir)
	return err == nil
}
