package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/throttlelab/throttlelab/cgroup"
)

// OwnCgroup is the cgroup that holds a process's cpu controller, with its
// counters kept open, so a server can measure itself from inside its
// container: its CPU use, its cpu.stat (periods, throttled periods and
// time) and its quota, on cgroup v1 or v2, whatever the container runtime
// mounted. On Kubernetes that is the container's own group; the runner
// reads it through the server's /cgroup endpoints.
type OwnCgroup struct {
	// Version is the hierarchy of the cpu controller, "v1" or "v2".
	Version string
	// Dir is the group's directory (under the root it was opened with).
	Dir string
	// AcctDir is the v1 cpuacct group's directory, where the usage is ("" on v2).
	AcctDir  string
	counters *cgroup.UsageCounter
}

// OwnCgroupReading is one reading of a group's counters.
type OwnCgroupReading struct {
	// UsageNs is the group's cumulative CPU time.
	UsageNs int64 `json:"usage_ns"`
	cgroup.CPUStat
}

// OpenOwnCgroup opens the cpu cgroup of process pid ("self" or a number)
// with every kernel path under root ("/" on a real host; a fake tree in
// tests): it finds the hierarchies in root/proc/self/mountinfo and the
// process's groups in root/proc/PID/cgroup. In a container, where the
// cgroup mount's root is the container's own group, the group is the mount
// point itself.
func OpenOwnCgroup(root, pid string) (*OwnCgroup, error) {
	l, err := cgroup.ReadLayout(root)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(root, "proc", pid, "cgroup"))
	if err != nil {
		return nil, fmt.Errorf("reading the process's cgroups: %w", err)
	}
	lines, err := cgroup.ParseProcCgroup(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	g := &OwnCgroup{Version: l.CPUVersion()}
	if g.Version == "" {
		return nil, errors.New("no cgroup hierarchy has the cpu controller: no CPU figures from inside (mount the cpu controller, or read the group from the host)")
	}
	_, dir, err := l.ProcessCPUGroup(lines)
	if err != nil {
		return nil, err
	}
	g.Dir = filepath.Join(root, dir)
	if g.Version == "v1" {
		_, acct, err := l.ProcessGroup(lines, "cpuacct")
		if err != nil {
			return nil, fmt.Errorf("cgroup v1 without cpuacct: no CPU usage: %w", err)
		}
		// With cpu and cpuacct mounted apart, the process may sit in groups of
		// different paths; then cpuacct.usage is not the usage of the group
		// whose quota binds it. Container runtimes put a container at the
		// same path in every hierarchy.
		if cpuPath, acctPath := pathOf(lines, "cpu"), pathOf(lines, "cpuacct"); cpuPath != acctPath {
			return nil, fmt.Errorf("the process's cpu group %s and cpuacct group %s differ: its usage would not be its cpu group's (put it in both at the same path)", cpuPath, acctPath)
		}
		g.AcctDir = filepath.Join(root, acct)
	}
	acct := g.AcctDir
	if g.Version == "v2" {
		acct = g.Dir
	}
	if g.counters, err = cgroup.OpenUsage(g.Version, g.Dir, acct); err != nil {
		return nil, fmt.Errorf("opening the process's CPU counters: %w", err)
	}
	// One reading now, so a group whose files say nothing useful (a v2
	// cpu.stat without usage_usec) is refused at once, not at the first sample.
	if _, err := g.Read(); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// pathOf is the process's path in the v1 hierarchy holding controller.
func pathOf(lines []cgroup.ProcCgroup, controller string) string {
	for _, ln := range lines {
		if ln.HierarchyID != 0 && slices.Contains(ln.Controllers, controller) {
			return ln.Path
		}
	}
	return ""
}

// OpenOwnCgroupForCurrentProcess opens the calling process's own cpu cgroup
// on this host (or in this container).
func OpenOwnCgroupForCurrentProcess() (*OwnCgroup, error) { return OpenOwnCgroup("/", "self") }

// Read reads the group's usage and cpu.stat: two preads on v1, one on v2,
// cheap enough to run every 10 ms. Not safe for concurrent use.
func (g *OwnCgroup) Read() (OwnCgroupReading, error) {
	c, err := g.counters.ReadUsage(true)
	if err != nil {
		return OwnCgroupReading{}, err
	}
	return OwnCgroupReading{UsageNs: int64(c.UsageNs), CPUStat: c.CPUStat}, nil
}

// Limits reads the group's own quota, period, burst and shares or weight:
// what the kubelet gave the container.
func (g *OwnCgroup) Limits() (*cgroup.CPULimits, error) {
	return cgroup.ReadGroupCPU(g.Dir, g.Version)
}

// Close closes the group's counter files.
func (g *OwnCgroup) Close() error { return g.counters.Close() }
