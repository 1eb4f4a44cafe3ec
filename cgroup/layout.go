package cgroup

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Mode is the cgroup layout of a host.
type Mode string

const (
	// ModeV1 means only v1 hierarchies are mounted.
	ModeV1 Mode = "v1"
	// ModeV2 means only the v2 unified hierarchy is mounted.
	ModeV2 Mode = "v2"
	// ModeHybrid means v1 controller hierarchies and a v2 hierarchy are both mounted
	// (the v2 one usually without the cpu controller).
	ModeHybrid Mode = "hybrid"
)

// Layout says where the cgroup hierarchies of a host are mounted.
type Layout struct {
	// Mode is v1, v2 or hybrid.
	Mode Mode
	// Unified is the v2 mount, if any.
	Unified *MountInfo
	// UnifiedControllers are the controllers available at the v2 mount's root.
	UnifiedControllers []string
	// V1 maps a v1 controller name (cpu, cpuacct, cpuset, ...) to its mount.
	V1 map[string]MountInfo
}

// CPUVersion returns which hierarchy holds the cpu controller: "v1", "v2", or ""
// if there is none.
func (l *Layout) CPUVersion() string {
	if _, ok := l.V1["cpu"]; ok {
		return "v1"
	}
	if l.Unified != nil && slices.Contains(l.UnifiedControllers, "cpu") {
		return "v2"
	}
	return ""
}

// DetectLayout works out the layout from parsed mountinfo. root is prepended to
// every path it reads (use "/" for the real host).
func DetectLayout(root string, mounts []MountInfo) (*Layout, error) {
	l := &Layout{V1: map[string]MountInfo{}}
	for i := range mounts {
		m := mounts[i]
		switch m.FSType {
		case "cgroup2":
			if l.Unified == nil {
				l.Unified = &m
			}
		case "cgroup":
			for _, o := range m.SuperOptions {
				switch o {
				case "cpu", "cpuacct", "cpuset":
					if _, seen := l.V1[o]; !seen {
						l.V1[o] = m
					}
				}
			}
		}
	}
	if l.Unified != nil {
		b, err := os.ReadFile(filepath.Join(root, l.Unified.MountPoint, "cgroup.controllers"))
		if err == nil {
			l.UnifiedControllers = strings.Fields(string(b))
		}
	}
	switch {
	case len(l.V1) > 0 && l.Unified != nil:
		l.Mode = ModeHybrid
	case len(l.V1) > 0:
		l.Mode = ModeV1
	case l.Unified != nil:
		l.Mode = ModeV2
	default:
		return nil, fmt.Errorf("no cgroup filesystem is mounted (looked in %s): mount cgroup2 on /sys/fs/cgroup", filepath.Join(root, "proc/self/mountinfo"))
	}
	return l, nil
}

// ReadLayout reads root/proc/self/mountinfo and detects the layout.
func ReadLayout(root string) (*Layout, error) {
	f, err := os.Open(filepath.Join(root, "proc/self/mountinfo"))
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	defer f.Close()
	mounts, err := ParseMountInfo(f)
	if err != nil {
		return nil, err
	}
	return DetectLayout(root, mounts)
}

// GroupDir returns the directory of a cgroup in the hierarchy mounted at m
// (relative to the host's root), given the group's path as /proc/PID/cgroup
// shows it. In a container the mount's root is the container's own group,
// and the path starts with it.
func GroupDir(m MountInfo, cgPath string) string {
	rel := cgPath
	if m.Root != "/" {
		if r, ok := strings.CutPrefix(cgPath, m.Root); ok && (r == "" || r[0] == '/') {
			rel = r
		}
	}
	return path.Join(m.MountPoint, rel)
}

// ProcessCPUGroup returns the mount and the directory (relative to root) of the
// cgroup that holds the process's cpu controller, for the process whose
// /proc/PID/cgroup lines are given.
func (l *Layout) ProcessCPUGroup(lines []ProcCgroup) (MountInfo, string, error) {
	return l.ProcessGroup(lines, "cpu")
}

// ProcessGroup is ProcessCPUGroup for any controller (cpuacct, cpuset, ...):
// the v1 hierarchy that has it, or else the v2 hierarchy.
func (l *Layout) ProcessGroup(lines []ProcCgroup, controller string) (MountInfo, string, error) {
	m, p, err := l.ProcessPath(lines, controller)
	if err != nil {
		return m, "", err
	}
	return m, GroupDir(m, p), nil
}

// ProcessPath returns the hierarchy that holds controller for the process
// whose /proc/PID/cgroup lines are given (the v1 hierarchy that has it, or
// else the v2 one) and the process's group in it, as those lines show it.
func (l *Layout) ProcessPath(lines []ProcCgroup, controller string) (MountInfo, string, error) {
	if m, ok := l.V1[controller]; ok {
		for _, ln := range lines {
			if ln.HierarchyID != 0 && slices.Contains(ln.Controllers, controller) {
				return m, ln.Path, nil
			}
		}
		return MountInfo{}, "", fmt.Errorf("the process is in no %s cgroup although the %s controller is mounted at %s", controller, controller, m.MountPoint)
	}
	if l.Unified != nil {
		for _, ln := range lines {
			if ln.HierarchyID == 0 {
				return *l.Unified, ln.Path, nil
			}
		}
	}
	return MountInfo{}, "", fmt.Errorf("no cgroup hierarchy has the %s controller", controller)
}

// BurstSupported reports whether the kernel under root has CPU burst: the
// cpu.cfs_burst_us file on v1, cpu.max.burst in a v2 group (the root group
// has none, so any group below it is looked at).
func BurstSupported(root string) (bool, error) {
	l, err := ReadLayout(root)
	if err != nil {
		return false, err
	}
	switch l.CPUVersion() {
	case "v1":
		_, err := os.Stat(filepath.Join(root, l.V1["cpu"].MountPoint, "cpu.cfs_burst_us"))
		return err == nil, nil
	case "v2":
		found, _ := filepath.Glob(filepath.Join(root, l.Unified.MountPoint, "*", "cpu.max.burst"))
		return len(found) > 0, nil
	}
	return false, nil
}
