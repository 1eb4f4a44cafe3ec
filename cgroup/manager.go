package cgroup

import (
	"bufio"
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
	base   map[string]string
	made   []string // directories made, in creation order
	groups []*Group
	// removeDir removes a group directory: os.Remove on cgroupfs, where rmdir
	// works although the directory lists files; tests on fake trees replace it.
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
// usage on v1) always, cpuset when withCpuset.
func NewManager(root, runID string, withCpuset bool) (*Manager, error) {
	if err := CheckName(runID); err != nil {
		return nil, err
	}
	l, err := ReadLayout(root)
	if err != nil {
		return nil, err
	}
	m := &Manager{root: root, layout: l, version: l.CPUVersion(), runID: runID, base: map[string]string{}, removeDir: os.Remove}
	switch m.version {
	case "v1":
		ctrls := []string{"cpu", "cpuacct"}
		if withCpuset {
			ctrls = append(ctrls, "cpuset")
		}
		for _, c := range ctrls {
			mnt, ok := l.V1[c]
			if !ok {
				if c == "cpuacct" {
					continue // usage then comes from nowhere; Usage says so
				}
				return nil, fmt.Errorf("the %s controller is not mounted: mount it (e.g. mount -t cgroup -o %s cgroup /sys/fs/cgroup/%s)", c, c, c)
			}
			if m.base[c], err = m.makeBase(filepath.Join(root, mnt.MountPoint), c == "cpuset"); err != nil {
				m.Cleanup(false)
				return nil, err
			}
		}
	case "v2":
		mnt := filepath.Join(root, l.Unified.MountPoint)
		want := []string{"cpu"}
		if withCpuset {
			if !slices.Contains(l.UnifiedControllers, "cpuset") {
				return nil, fmt.Errorf("cgroup v2 has no cpuset controller here: cpusets are not available")
			}
			want = append(want, "cpuset")
		}
		if err := enableControllers(mnt, []string{"throttlelab", runID}, want); err != nil {
			return nil, err
		}
		dir, err := m.makeBase(mnt, false)
		if err != nil {
			m.Cleanup(false)
			return nil, err
		}
		if err := enableControllers(dir, nil, want); err != nil {
			m.Cleanup(false)
			return nil, err
		}
		for _, c := range append(want, "cpuacct") {
			m.base[c] = dir
		}
	default:
		return nil, errors.New("no cgroup hierarchy has the cpu controller: CPU limits cannot be enforced on this host")
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

// makeBase makes throttlelab/<run-id> under a hierarchy's mount. On v1 cpuset
// every new group starts with no CPUs and no memory nodes, so it copies its
// parent's before anything can join.
func (m *Manager) makeBase(mount string, cpuset bool) (string, error) {
	dir := mount
	for _, part := range []string{"throttlelab", m.runID} {
		parent := dir
		dir = filepath.Join(dir, part)
		err := os.Mkdir(dir, 0o755)
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

// enableControllers makes sure each of the groups from dir down through sub has
// the controllers in its cgroup.subtree_control, creating nothing: v2 hands a
// controller to a group only if its parent enabled it.
func enableControllers(dir string, sub []string, ctrls []string) error {
	for i := 0; ; i++ {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // the group below does not exist yet
			}
			return err
		}
		have := strings.Fields(string(b))
		for _, c := range ctrls {
			if !slices.Contains(have, c) {
				if err := writeFile(dir, "cgroup.subtree_control", "+"+c); err != nil {
					return fmt.Errorf("enabling the %s controller below %s: %w", c, dir, err)
				}
			}
		}
		if i >= len(sub) {
			return nil
		}
		dir = filepath.Join(dir, sub[i])
	}
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
			if err := os.Mkdir(dir, 0o755); err != nil {
				return nil, fmt.Errorf("creating cgroup %s: %w", dir, err)
			}
			m.made = append(m.made, dir)
		}
		g.Dirs[c] = dir
	}
	// v1 cpuset: the memory nodes default to the parent's, since CPUs alone
	// would leave the group unusable.
	if d, ok := g.Dirs["cpuset"]; ok && m.version == "v1" && s.Mems == "" {
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

// CPUStat is cpu.stat in common units, for v1 and v2 alike.
type CPUStat struct {
	Periods          uint64 `json:"nr_periods"`
	ThrottledPeriods uint64 `json:"nr_throttled"`
	ThrottledUsec    uint64 `json:"throttled_usec"`
	Bursts           uint64 `json:"nr_bursts"`
	BurstUsec        uint64 `json:"burst_usec"`
}

// Sub returns s - o, field by field: what happened between two readings.
func (s CPUStat) Sub(o CPUStat) CPUStat {
	return CPUStat{s.Periods - o.Periods, s.ThrottledPeriods - o.ThrottledPeriods, s.ThrottledUsec - o.ThrottledUsec, s.Bursts - o.Bursts, s.BurstUsec - o.BurstUsec}
}

// Add returns s + o, field by field: several groups' counters together.
func (s CPUStat) Add(o CPUStat) CPUStat {
	return CPUStat{s.Periods + o.Periods, s.ThrottledPeriods + o.ThrottledPeriods, s.ThrottledUsec + o.ThrottledUsec, s.Bursts + o.Bursts, s.BurstUsec + o.BurstUsec}
}

// ParseCPUStat parses a cpu.stat file of either version (v1 counts time in ns,
// v2 in us).
func ParseCPUStat(b []byte) (CPUStat, error) {
	var s CPUStat
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return s, fmt.Errorf("cpu.stat %s: %q is not a number", k, v)
		}
		switch k {
		case "nr_periods":
			s.Periods = n
		case "nr_throttled":
			s.ThrottledPeriods = n
		case "throttled_time":
			s.ThrottledUsec = n / 1000
		case "throttled_usec":
			s.ThrottledUsec = n
		case "nr_bursts":
			s.Bursts = n
		case "burst_time":
			s.BurstUsec = n / 1000
		case "burst_usec":
			s.BurstUsec = n
		}
	}
	return s, sc.Err()
}

// Stat reads the group's cpu.stat.
func (g *Group) Stat() (CPUStat, error) {
	b, err := os.ReadFile(filepath.Join(g.Dirs["cpu"], "cpu.stat"))
	if err != nil {
		return CPUStat{}, err
	}
	return ParseCPUStat(b)
}

// Usage returns the CPU time the group has used: v2 cpu.stat usage_usec, v1
// cpuacct.usage (in the cpuacct hierarchy, which may be mounted apart from cpu).
func (g *Group) Usage() (time.Duration, error) {
	if g.m.version == "v2" {
		b, err := os.ReadFile(filepath.Join(g.Dirs["cpu"], "cpu.stat"))
		if err != nil {
			return 0, err
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "usage_usec "); ok {
				n, err := strconv.ParseUint(v, 10, 64)
				return time.Duration(n) * time.Microsecond, err
			}
		}
		return 0, errors.New("cpu.stat has no usage_usec")
	}
	d, ok := g.Dirs["cpuacct"]
	if !ok {
		return 0, errors.New("the cpuacct controller is not mounted: no CPU usage on this cgroup v1 host")
	}
	n, err := readInt(filepath.Join(d, "cpuacct.usage"))
	return time.Duration(n), err
}

// Cleanup removes every group and directory the manager made, newest first.
// With kill it first SIGKILLs any process still in its groups (they can only be
// the run's own) and waits for them to leave. It keeps going after an error and
// returns them all.
func (m *Manager) Cleanup(kill bool) error {
	var errs []error
	if kill {
		for _, g := range m.groups {
			for _, pid := range g.Procs() {
				syscall.Kill(pid, syscall.SIGKILL)
			}
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
	m.made, m.groups = nil, nil
	return errors.Join(errs...)
}

func hasSubdir(entries []fs.DirEntry) bool {
	for _, e := range entries {
		if e.IsDir() {
			return true
		}
	}
	return false
}
