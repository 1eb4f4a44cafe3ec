package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// RemoveStale removes the groups of runs whose runner died without cleaning up
// (killed with SIGKILL, say): under throttlelab/ in every cpu, cpuacct and cpuset
// hierarchy, a run directory named NAME-PID whose PID is no longer alive and whose
// groups hold no process, and the run's side groups (throttlelab-KIND-NAME-PID
// beside throttlelab/). It returns the directories it removed.
func RemoveStale(root string) ([]string, error) {
	l, err := ReadLayout(root)
	if err != nil {
		return nil, err
	}
	var mounts []string
	for _, c := range []string{"cpu", "cpuacct", "cpuset"} {
		if m, ok := l.V1[c]; ok {
			mounts = append(mounts, filepath.Join(root, m.MountPoint))
		}
	}
	if l.Unified != nil {
		mounts = append(mounts, filepath.Join(root, l.Unified.MountPoint))
	}
	var removed []string
	var errs []error
	for _, m := range mounts {
		// Side groups (NewSideGroup): throttlelab-NAME-RUNID at the top.
		tops, _ := os.ReadDir(m)
		for _, d := range tops {
			if !d.IsDir() || !strings.HasPrefix(d.Name(), sidePrefix) || !staleRun(d.Name()) {
				continue
			}
			dir := filepath.Join(m, d.Name())
			if busy(dir) {
				continue
			}
			if err := os.Remove(dir); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, dir)
		}
		runs, _ := os.ReadDir(filepath.Join(m, "throttlelab"))
		for _, r := range runs {
			if !r.IsDir() || !staleRun(r.Name()) {
				continue
			}
			dir := filepath.Join(m, "throttlelab", r.Name())
			if busy(dir) {
				continue
			}
			errs = append(errs, removeGroups(dir)...)
			if err := os.Remove(dir); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, dir)
		}
	}
	return removed, errors.Join(errs...)
}

// staleRun reports whether a run directory NAME-PID belongs to a dead process.
func staleRun(name string) bool {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return false
	}
	pid, err := strconv.Atoi(name[i+1:])
	if err != nil || pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// busy reports whether any group under dir holds a process.
func busy(dir string) bool {
	found := false
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "cgroup.procs" {
			if b, _ := os.ReadFile(p); len(strings.TrimSpace(string(b))) > 0 {
				found = true
			}
		}
		return nil
	})
	return found
}

// removeGroups removes the groups below dir, the nested ones (a pod's
// instances) before their parent.
func removeGroups(dir string) []error {
	var errs []error
	groups, _ := os.ReadDir(dir)
	for _, g := range groups {
		if g.IsDir() {
			sub := filepath.Join(dir, g.Name())
			errs = append(errs, removeGroups(sub)...)
			if err := os.Remove(sub); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}
