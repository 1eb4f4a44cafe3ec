package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
)

// Manager creates and removes the cgroups of one run, all under
// throttlelab/<run-id> in each hierarchy it uses, and never touches anything else
// (on v2 it may have to enable the cpu controller in the subtree_control of the
// groups above its own, which is how v2 hands controllers down).
type Manager struct {
	root    string
	layout  *Layout
	version string // of the cpu controller: v1 or v2
	burst   bool
	runID   string
	// base holds, per controller, the directory of throttlelab/<run-id> in its
	// hierarchy (on v2 all controllers share one).
	base map[string]string
	// v2 says which controllers live in the v2 hierarchy (on a hybrid host cpu
	// may be there while cpuset is on v1).
	v2 map[string]bool
	// enabled holds the controllers this run enabled in a v2 subtree_control
	// outside its throttlelab tree (directory, controller), to be disabled again.
	enabled   [][2]string
	made      []string // directories made, in creation order
	groups    []*Group
	mkdir     func(string, os.FileMode) error
	removeDir func(string) error
}

// Group is one cgroup made by a Manager.
type Group struct {
	Name string
	// Dirs maps a controller (cpu, cpuacct, cpuset) to the group's directory.
	Dirs     map[string]string
	Settings Settings
	m        *Manager
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// CheckName returns an error unless name is a safe single path element.
func CheckName(name string) error {
	if !namePattern.MatchString(name) || name == "." || name == ".." {
		return fmt.Errorf("cgroup name %q: use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// NewManager detects the layout under root ("/" on a real host) and makes
// throttlelab/<runID> in every hierarchy the run needs: cpu (and cpuacct for
// usage on v1) always, cpuset when withCpuset. Each controller is used where the
// host has it, so a hybrid host with cpu on v2 and cpuset on v1 works too.
func NewManager(root, runID string, withCpuset bool) (*Manager, error) {
	return newManager(root, runID, withCpuset, os.Mkdir, os.Remove)
}

// newManager is NewManager with the functions that make and remove group
// directories: os.Mkdir and os.Remove on cgroupfs, where the kernel fills a new
// directory with its files and rmdir removes it although it lists them; tests
// on fake trees pass functions that do what the kernel would.
func newManager(root, runID string, withCpuset bool, mkdir func(string, os.FileMode) error, removeDir func(string) error) (*Manager, error) {
	if err := CheckName(runID); err != nil {
		return nil, err
	}
	l, err := ReadLayout(root)
	if err != nil {
		return nil, err
	}
	m := &Manager{root: root, layout: l, version: l.CPUVersion(), runID: runID, base: map[string]string{}, v2: map[string]bool{}, mkdir: mkdir, removeDir: removeDir}
	if m.version == "" {
		return nil, errors.New("no cgroup hierarchy has the cpu controller: CPU limits cannot be enforced on this host")
	}
	ctrls := []string{"cpu", "cpuacct"}
	if withCpuset {
		ctrls = append(ctrls, "cpuset")
	}
	// On v2 one directory serves every controller, and each one it needs must be
	// enabled on the way down.
	var v2Want []string
	for _, c := range ctrls {
		if _, ok := l.V1[c]; !ok && c != "cpuacct" && l.Unified != nil && slices.Contains(l.UnifiedControllers, c) {
			v2Want = append(v2Want, c)
		}
	}
	for _, c := range ctrls {
		if mnt, ok := l.V1[c]; ok {
			dir := filepath.Join(root, mnt.MountPoint)
			if b := m.baseIn(dir); b != "" { // co-mounted with a controller already made
				m.base[c] = b
				continue
			}
			if m.base[c], err = m.makeBase(dir, c == "cpuset", nil); err != nil {
				m.Cleanup(false)
				return nil, err
			}
			continue
		}
		// Not on v1: cpuacct's usage is in v2's cpu.stat, with the cpu controller.
		if c == "cpuacct" && m.version == "v1" {
			continue // usage then comes from nowhere; Usage says so
		}
		if c == "cpuset" && !slices.Contains(v2Want, "cpuset") {
			return nil, errors.New("no cgroup hierarchy has the cpuset controller here: cpusets are not available (drop cpuset from the spec)")
		}
		dir := filepath.Join(root, l.Unified.MountPoint)
		if b := m.baseIn(dir); b != "" {
			m.base[c], m.v2[c] = b, true
			continue
		}
		if m.base[c], err = m.makeBase(dir, false, v2Want); err != nil {
			m.Cleanup(false)
			return nil, err
		}
		m.v2[c] = true
	}
	dir := m.base["cpu"]
	if m.version == "v1" {
		_, err = os.Stat(filepath.Join(dir, "cpu.cfs_burst_us"))
	} else {
		_, err = os.Stat(filepath.Join(dir, "cpu.max.burst"))
	}
	m.burst = err == nil
	return m, nil
}

// baseIn returns the run's directory already made under mount, or "".
func (m *Manager) baseIn(mount string) string {
	for _, b := range m.base {
		if filepath.Dir(filepath.Dir(b)) == mount {
			return b
		}
	}
	return ""
}

// makeBase makes throttlelab/<run-id> under a hierarchy's mount. On v1 cpuset
// every new group starts with no CPUs and no memory nodes, so it copies its
// parent's before anything can join. On v2 (enable not empty) a group gets a
// controller only if its parent lists it in cgroup.subtree_control, so the
// controllers are enabled in the mount's root, in throttlelab and in the run's
// directory, each before the level below is made (as runc does). The groups
// that hold processes are the run's leaves, below all of them, so the "no
// internal processes" rule holds.
func (m *Manager) makeBase(mount string, cpuset bool, enable []string) (string, error) {
	dir := mount
	if len(enable) > 0 {
		added, err := enableControllers(dir, enable)
		if err != nil {
			return "", err
		}
		for _, c := range added {
			m.enabled = append(m.enabled, [2]string{dir, c})
		}
	}
	for _, part := range []string{"throttlelab", m.runID} {
		parent := dir
		dir = filepath.Join(dir, part)
		err := m.mkdir(dir, 0o755)
		switch {
		case err == nil:
			m.made = append(m.made, dir)
		case errors.Is(err, fs.ErrExist) && part == "throttlelab":
		case errors.Is(err, fs.ErrExist):
			return "", fmt.Errorf("cgroup %s already exists: another run with id %s is going on, or crashed (remove it with rmdir)", dir, m.runID)
		case errors.Is(err, fs.ErrPermission):
			return "", fmt.Errorf("creating cgroup %s: permission denied: real CPU limits need root (sudo throttlelab run ...), or simulate the experiment without root: throttlelab sim SPEC", dir)
		default:
			return "", fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		if cpuset {
			if err := inheritCpuset(parent, dir); err != nil {
				return "", err
			}
		}
		if len(enable) > 0 {
			if _, err := enableControllers(dir, enable); err != nil {
				return "", err
			}
		}
	}
	return dir, nil
}

func inheritCpuset(parent, dir string) error {
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		cur, _ := os.ReadFile(filepath.Join(dir, f))
		if len(bytes.TrimSpace(cur)) > 0 {
			continue
		}
		v, err := os.ReadFile(filepath.Join(parent, f))
		if err != nil {
			return fmt.Errorf("reading %s: %w", filepath.Join(parent, f), err)
		}
		if err := writeFile(dir, f, strings.TrimSpace(string(v))); err != nil {
			return err
		}
	}
	return nil
}

// enableControllers makes sure the v2 group dir has ctrls in its
// cgroup.subtree_control, and returns those it had to enable.
func enableControllers(dir string, ctrls []string) (added []string, err error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, "cgroup.subtree_control"), err)
	}
	have := strings.Fields(string(b))
	for _, c := range ctrls {
		if slices.Contains(have, c) {
			continue
		}
		err := writeFile(dir, "cgroup.subtree_control", "+"+c)
		switch {
		case err == nil:
		case errors.Is(err, syscall.EBUSY):
			return added, fmt.Errorf("enabling the %s controller below %s: the group holds processes, and cgroup v2 gives controllers only to the children of groups without any (no internal processes): run throttlelab where its cgroup's parent can delegate (e.g. a systemd unit with Delegate=yes), or move the processes into a child group first", c, dir)
		case errors.Is(err, fs.ErrNotExist):
			return added, fmt.Errorf("enabling the %s controller below %s: the %s controller is not delegated to this group (not in its cgroup.controllers): enable it in the parent's cgroup.subtree_control", c, dir, c)
		default:
			return added, fmt.Errorf("enabling the %s controller below %s: %w", c, dir, err)
		}
		added = append(added, c)
	}
	return added, nil
}

// writeFile is the one place that writes to cgroupfs, so every error names the
// file and says what to do.
func writeFile(dir, file, value string) error {
	p := filepath.Join(dir, file)
	err := os.WriteFile(p, []byte(value), 0o644)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("writing %q to %s: permission denied: real CPU limits need root (sudo throttlelab run ...), or simulate the experiment without root: throttlelab sim SPEC", value, p)
	case errors.Is(err, syscall.EINVAL):
		return fmt.Errorf("writing %q to %s: the kernel refused the value (invalid argument)", value, p)
	}
	return fmt.Errorf("writing %q to %s: %w", value, p, err)
}

// Version returns the cpu controller's cgroup version, "v1" or "v2".
func (m *Manager) Version() string { return m.version }

// BurstSupported reports whether the kernel has CFS burst.
func (m *Manager) BurstSupported() bool { return m.burst }

// Layout returns the host's cgroup layout.
func (m *Manager) Layout() *Layout { return m.layout }

// NewGroup makes group name under the run's directory with settings s.
func (m *Manager) NewGroup(name string, s Settings) (*Group, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if s.BurstUsec > 0 && !m.burst {
		return nil, errors.New("cpu burst is not supported by this kernel (needs Linux 5.14+, cpu.cfs_burst_us or cpu.max.burst): drop burst from the spec")
	}
	g := &Group{Name: name, Dirs: map[string]string{}, Settings: s, m: m}
	ctrls := []string{"cpu", "cpuacct"}
	if s.Cpus != "" || s.Mems != "" {
		if _, ok := m.base["cpuset"]; !ok {
			return nil, fmt.Errorf("group %s has a cpuset but the run was made without one", name)
		}
		ctrls = append(ctrls, "cpuset")
	}
	for _, c := range ctrls {
		base, ok := m.base[c]
		if !ok {
			continue
		}
		dir := filepath.Join(base, name)
		if !slices.Contains(m.made, dir) {
			if err := m.mkdir(dir, 0o755); err != nil {
				return nil, fmt.Errorf("creating cgroup %s: %w", dir, err)
			}
			m.made = append(m.made, dir)
		}
		g.Dirs[c] = dir
	}
	// v1 cpuset: the memory nodes default to the parent's, since CPUs alone
	// would leave the group unusable.
	if d, ok := g.Dirs["cpuset"]; ok && !m.v2["cpuset"] && s.Mems == "" {
		v, err := os.ReadFile(filepath.Join(filepath.Dir(d), "cpuset.mems"))
		if err != nil {
			return nil, fmt.Errorf("group %s: reading the memory nodes of its parent: %w", name, err)
		}
		s.Mems = strings.TrimSpace(string(v))
	}
	for _, w := range s.Writes(m.version, m.burst) {
		if err := writeFile(g.Dirs[w.Controller], w.File, w.Value); err != nil {
			return nil, fmt.Errorf("group %s: %w", name, err)
		}
	}
	m.groups = append(m.groups, g)
	return g, nil
}

// Remove removes the group's directories (it must hold no process any more).
func (g *Group) Remove() error {
	m := g.m
	var errs []error
	for _, d := range g.distinctDirs() {
		if err := m.removeDir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
			continue
		}
		m.made = slices.DeleteFunc(m.made, func(x string) bool { return x == d })
	}
	m.groups = slices.DeleteFunc(m.groups, func(x *Group) bool { return x == g })
	return errors.Join(errs...)
}

// Attach moves process pid into the group in every hierarchy it has.
func (g *Group) Attach(pid int) error {
	for _, dir := range g.distinctDirs() {
		if err := writeFile(dir, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("moving process %d into group %s: %w", pid, g.Name, err)
		}
	}
	return nil
}

func (g *Group) distinctDirs() []string {
	var out []string
	for _, c := range []string{"cpu", "cpuacct", "cpuset"} {
		if d, ok := g.Dirs[c]; ok && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// Procs returns the processes in the group (in any of its hierarchies).
func (g *Group) Procs() []int {
	var pids []int
	for _, dir := range g.distinctDirs() {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil && !slices.Contains(pids, p) {
				pids = append(pids, p)
			}
		}
	}
	return pids
}

// CPUStat is cpu.stat in common units, for v1 and v2 alike, with the CPU
// pressure (PSI) totals of cpu.pressure where the kernel has them (v2):
// the quota model's cfs.Stat, the one type of these counters.
type CPUStat = cfs.Stat

// ParseCPUStat parses a cpu.stat file of either version (v1 counts time in ns,
// v2 in us).
func ParseCPUStat(b []byte) (CPUStat, error) {
	c, err := ParseCPUCounters(b)
	return c.CPUStat, err
}

// Stat reads the group's cpu.stat and, on v2, its cpu.pressure.
func (g *Group) Stat() (CPUStat, error) {
	b, err := os.ReadFile(filepath.Join(g.Dirs["cpu"], "cpu.stat"))
	if err != nil {
		return CPUStat{}, err
	}
	s, err := ParseCPUStat(b)
	if err != nil || !g.m.v2["cpu"] {
		return s, err
	}
	// PSI may be off (psi=0 on the kernel command line): then there is no file.
	b, err = os.ReadFile(filepath.Join(g.Dirs["cpu"], "cpu.pressure"))
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	p, err := ParsePressure(b)
	s.PressureSomeUsec, s.PressureFullUsec = p.SomeTotalUsec, p.FullTotalUsec
	return s, err
}

// Usage returns the CPU time the group has used: v2 cpu.stat usage_usec, v1
// cpuacct.usage (in the cpuacct hierarchy, which may be mounted apart from cpu).
func (g *Group) Usage() (time.Duration, error) {
	u, err := openUsage(g)
	if err != nil {
		return 0, err
	}
	defer u.Close()
	r, err := u.ReadUsage(false)
	return r.Usage(), err
}

// Cleanup removes every group and directory the manager made, newest first.
// With kill it first SIGKILLs any process still in its groups (they can only be
// the run's own) and waits for them to leave. It keeps going after an error and
// returns them all.
func (m *Manager) Cleanup(kill bool) error {
	var errs []error
	if kill {
		for _, g := range m.groups {
			g.kill()
		}
		deadline := time.Now().Add(10 * time.Second)
		for _, g := range m.groups {
			for len(g.Procs()) > 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	for i := len(m.made) - 1; i >= 0; i-- {
		err := m.removeDir(m.made[i])
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing cgroup %s: %w", m.made[i], err))
		}
	}
	// throttlelab/ itself is shared by concurrent runs: removed only when empty.
	for _, base := range m.base {
		if entries, err := os.ReadDir(filepath.Dir(base)); err == nil && !hasSubdir(entries) {
			m.removeDir(filepath.Dir(base))
		}
	}
	// Controllers this run enabled above its tree go back to how they were,
	// unless something else uses them by now (EBUSY: then they stay).
	for i := len(m.enabled) - 1; i >= 0; i-- {
		e := m.enabled[i]
		if err := writeFile(e[0], "cgroup.subtree_control", "-"+e[1]); err != nil && !errors.Is(err, syscall.EBUSY) {
			errs = append(errs, err)
		}
	}
	m.made, m.groups, m.enabled = nil, nil, nil
	return errors.Join(errs...)
}

// kill SIGKILLs every process in the group: through cgroup.kill on v2 (Linux
// 5.14+), which also catches processes forking while it runs, else one by one.
func (g *Group) kill() {
	if d, ok := g.Dirs["cpu"]; ok && g.m.v2["cpu"] {
		if err := os.WriteFile(filepath.Join(d, "cgroup.kill"), []byte("1"), 0o644); err == nil {
			return
		}
	}
	for _, pid := range g.Procs() {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

func hasSubdir(entries []fs.DirEntry) bool {
	for _, e := range entries {
		if e.IsDir() {
			return true
		}
	}
	return false
}

// NewSideGroup makes a group beside throttlelab/ at the top of the cpu (and
// cpuacct) hierarchies, as throttlelab-<name>-<run-id>, with settings s: it
// competes with the experiment's whole tree as one sibling, as a process in
// the root group would, but with a weight of its own (the load generator's
// place). RemoveStale removes it after a killed run.
func (m *Manager) NewSideGroup(name string, s Settings) (*Group, error) {
	full := sidePrefix + name + "-" + m.runID
	if err := CheckName(full); err != nil {
		return nil, err
	}
	g := &Group{Name: name, Dirs: map[string]string{}, Settings: s, m: m}
	for _, c := range []string{"cpu", "cpuacct"} {
		base, ok := m.base[c]
		if !ok {
			continue
		}
		dir := filepath.Join(filepath.Dir(filepath.Dir(base)), full)
		if !slices.Contains(m.made, dir) {
			if err := m.mkdir(dir, 0o755); err != nil {
				return nil, fmt.Errorf("creating cgroup %s: %w", dir, err)
			}
			m.made = append(m.made, dir)
		}
		g.Dirs[c] = dir
	}
	for _, w := range s.Writes(m.version, m.burst) {
		if err := writeFile(g.Dirs[w.Controller], w.File, w.Value); err != nil {
			return nil, fmt.Errorf("group %s: %w", full, err)
		}
	}
	m.groups = append(m.groups, g)
	return g, nil
}

// sidePrefix starts the names of side groups (NewSideGroup).
const sidePrefix = "throttlelab-"

// AttachSelf moves the calling process (all its threads) into the group in
// every hierarchy it has, and returns a function that moves it back to the
// groups it was in (or, if those are gone, to each hierarchy's root). The
// process must be moved back before the group is removed: a group that
// holds a process cannot be removed, and Cleanup(true) kills what is left in
// the run's groups.
func (g *Group) AttachSelf() (restore func() error, err error) {
	b, err := os.ReadFile(filepath.Join(g.m.root, "proc/self/cgroup"))
	if err != nil {
		return nil, err
	}
	lines, err := ParseProcCgroup(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	type back struct{ dir, mount string }
	var was []back
	var seen []string
	for _, c := range []string{"cpu", "cpuacct", "cpuset"} {
		d, ok := g.Dirs[c]
		if !ok || slices.Contains(seen, d) {
			continue
		}
		seen = append(seen, d)
		mnt, dir, err := g.m.layout.ProcessGroup(lines, c)
		if err != nil {
			return nil, err
		}
		was = append(was, back{filepath.Join(g.m.root, dir), filepath.Join(g.m.root, mnt.MountPoint)})
	}
	pid := strconv.Itoa(os.Getpid())
	restore = func() error {
		var errs []error
		for _, b := range was {
			if err := writeFile(b.dir, "cgroup.procs", pid); err != nil {
				if err2 := writeFile(b.mount, "cgroup.procs", pid); err2 != nil {
					errs = append(errs, fmt.Errorf("moving this process back out of group %s: %w", g.Name, err))
				}
			}
		}
		return errors.Join(errs...)
	}
	if err := g.Attach(os.Getpid()); err != nil {
		restore()
		return nil, err
	}
	return restore, nil
}

// NewChildGroup makes group name inside parent (a group this manager made)
// with settings s, as the kubelet nests a container's group in its pod's:
// each quota applies, the child's and every ancestor's. On v2 the cpu
// controller is enabled in the parent's cgroup.subtree_control first (the
// parent then may hold no process of its own). Cpusets are per leaf group
// only: a child with a cpuset is refused. Remove the children before the
// parent (Cleanup does, newest first).
func (m *Manager) NewChildGroup(parent *Group, name string, s Settings) (*Group, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if parent == nil || parent.m != m || !slices.Contains(m.groups, parent) {
		return nil, fmt.Errorf("group %s: its parent group is not one of this run's groups", name)
	}
	if s.Cpus != "" || s.Mems != "" {
		return nil, fmt.Errorf("group %s: a nested group cannot have a cpuset here: give the cpuset to the parent's siblings, not its children", name)
	}
	if s.BurstUsec > 0 && !m.burst {
		return nil, errors.New("cpu burst is not supported by this kernel (needs Linux 5.14+, cpu.cfs_burst_us or cpu.max.burst): drop burst from the spec")
	}
	if len(parent.Procs()) > 0 {
		return nil, fmt.Errorf("group %s: its parent %s holds processes: nest groups before starting anything in the parent", name, parent.Name)
	}
	g := &Group{Name: name, Dirs: map[string]string{}, Settings: s, m: m}
	for _, c := range []string{"cpu", "cpuacct"} {
		pdir, ok := parent.Dirs[c]
		if !ok {
			continue
		}
		if m.v2[c] && c == "cpu" {
			if _, err := enableControllers(pdir, []string{"cpu"}); err != nil {
				return nil, fmt.Errorf("group %s: %w", g.Name, err)
			}
		}
		dir := filepath.Join(pdir, name)
		if !slices.Contains(m.made, dir) {
			if err := m.mkdir(dir, 0o755); err != nil {
				return nil, fmt.Errorf("creating cgroup %s: %w", dir, err)
			}
			m.made = append(m.made, dir)
		}
		g.Dirs[c] = dir
	}
	for _, w := range s.Writes(m.version, m.burst) {
		if err := writeFile(g.Dirs[w.Controller], w.File, w.Value); err != nil {
			return nil, fmt.Errorf("group %s: %w", g.Name, err)
		}
	}
	m.groups = append(m.groups, g)
	return g, nil
}
