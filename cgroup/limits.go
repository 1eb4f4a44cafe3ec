package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/throttlelab/throttlelab/units"
)

// CPULimits are the CPU settings of one process's cgroup, as the kernel shows them.
type CPULimits struct {
	// Mode is the host's cgroup layout.
	Mode Mode `json:"cgroup_mode"`
	// CPUVersion is the hierarchy holding the cpu controller: "v1" or "v2".
	CPUVersion string `json:"cpu_controller"`
	// Group is the cgroup's directory.
	Group string `json:"group"`
	// QuotaUsec is the CFS quota per period, or -1 when there is no limit.
	QuotaUsec int64 `json:"quota_usec"`
	// PeriodUsec is the CFS period.
	PeriodUsec uint64 `json:"period_usec"`
	// BurstUsec is the CFS burst (cpu.cfs_burst_us, cpu.max.burst); 0 if unset.
	BurstUsec uint64 `json:"burst_usec"`
	// BurstSupported reports whether the kernel offers burst at all.
	BurstSupported bool `json:"burst_supported"`
	// Shares is the v1 cpu.shares (0 on v2).
	Shares uint64 `json:"shares,omitempty"`
	// Weight is the v2 cpu.weight (0 on v1).
	Weight uint64 `json:"weight,omitempty"`
	// Cpuset lists the CPUs the group may run on ("0-3,6"), if a cpuset controller
	// is mounted.
	Cpuset string `json:"cpuset,omitempty"`
	// LimitCores is the tightest quota/period of the group and its ancestors: the
	// number of CPUs the group can use per period. 0 means unlimited.
	LimitCores float64 `json:"limit_cores"`
}

// ReadProcessLimits reads the CPU limits of process pid ("self" or a number) with
// every kernel path taken under root.
func ReadProcessLimits(root, pid string) (*CPULimits, error) {
	l, err := ReadLayout(root)
	if err != nil {
		return nil, err
	}
	lines, err := readProcCgroup(root, pid)
	if err != nil {
		return nil, err
	}
	out := &CPULimits{Mode: l.Mode, CPUVersion: l.CPUVersion(), QuotaUsec: -1}
	if out.CPUVersion == "" {
		return out, nil
	}
	m, dir, err := l.ProcessCPUGroup(lines)
	if err != nil {
		return nil, err
	}
	out.Group = dir
	abs := filepath.Join(root, dir)
	if out.CPUVersion == "v1" {
		err = readV1CPU(abs, out)
	} else {
		err = readV2CPU(abs, out)
	}
	if err != nil {
		return nil, err
	}
	out.LimitCores, err = limitCores(root, m, dir, out.CPUVersion)
	if err != nil {
		return nil, err
	}
	if _, cdir, err := l.ProcessGroup(lines, "cpuset"); err == nil {
		out.Cpuset = readCpuset(filepath.Join(root, cdir))
	}
	return out, nil
}

// LimitsForCurrentProcess reads the CPU limits of the calling process on this host.
func LimitsForCurrentProcess() (*CPULimits, error) { return ReadProcessLimits("/", "self") }

func readProcCgroup(root, pid string) ([]ProcCgroup, error) {
	f, err := os.Open(filepath.Join(root, "proc", pid, "cgroup"))
	if err != nil {
		return nil, fmt.Errorf("reading the process's cgroups: %w", err)
	}
	defer f.Close()
	return ParseProcCgroup(f)
}

func readV1CPU(dir string, out *CPULimits) error {
	var err error
	if out.QuotaUsec, err = readInt(filepath.Join(dir, "cpu.cfs_quota_us")); err != nil {
		return err
	}
	p, err := readInt(filepath.Join(dir, "cpu.cfs_period_us"))
	if err != nil {
		return err
	}
	out.PeriodUsec = uint64(p)
	// cpu.cfs_burst_us exists from Linux 5.14 on.
	if b, err := readInt(filepath.Join(dir, "cpu.cfs_burst_us")); err == nil {
		out.BurstUsec, out.BurstSupported = uint64(b), true
	}
	s, err := readInt(filepath.Join(dir, "cpu.shares"))
	if err != nil {
		return err
	}
	out.Shares = uint64(s)
	return nil
}

func readV2CPU(dir string, out *CPULimits) error {
	// The root group has no cpu.max, cpu.weight or cpu.max.burst: it is unlimited.
	b, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
	if errors.Is(err, fs.ErrNotExist) {
		out.PeriodUsec = 100000
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", filepath.Join(dir, "cpu.max"), err)
	}
	if out.QuotaUsec, out.PeriodUsec, err = ParseCPUMax(b); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, "cpu.max"), err)
	}
	if v, err := readInt(filepath.Join(dir, "cpu.max.burst")); err == nil {
		out.BurstUsec, out.BurstSupported = uint64(v), true
	}
	if v, err := readInt(filepath.Join(dir, "cpu.weight")); err == nil {
		out.Weight = uint64(v)
	}
	return nil
}

// ParseCPUMax parses a v2 cpu.max file: "max 100000" or "50000 100000". The quota
// is -1 for "max".
func ParseCPUMax(b []byte) (quotaUsec int64, periodUsec uint64, err error) {
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("want \"QUOTA PERIOD\", got %q", strings.TrimSpace(string(b)))
	}
	if f[0] == "max" {
		quotaUsec = -1
	} else if quotaUsec, err = strconv.ParseInt(f[0], 10, 64); err != nil {
		return 0, 0, fmt.Errorf("quota %q: %w", f[0], err)
	}
	if periodUsec, err = strconv.ParseUint(f[1], 10, 64); err != nil || periodUsec == 0 {
		return 0, 0, fmt.Errorf("period %q: want a positive integer", f[1])
	}
	return quotaUsec, periodUsec, nil
}

// limitCores walks from the group up to its hierarchy's mount point and returns the
// tightest quota/period on the way (0 if none is limited): a limit on a parent
// (a Kubernetes pod, say) binds the containers under it.
func limitCores(root string, m MountInfo, dir, version string) (float64, error) {
	best := math.Inf(1)
	for d := dir; ; d = path.Dir(d) {
		abs := filepath.Join(root, d)
		q, p, err := ReadQuota(abs, version)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, err
		}
		if err == nil && q > 0 && p > 0 {
			best = min(best, float64(q)/float64(p))
		}
		if d == m.MountPoint || !strings.HasPrefix(d, m.MountPoint) || d == "/" {
			break
		}
	}
	if math.IsInf(best, 1) {
		return 0, nil
	}
	return best, nil
}

// ReadQuota reads a group's CFS quota (-1: none) and period alone, from
// cpu.max (v2) or cpu.cfs_quota_us and, where there is a quota,
// cpu.cfs_period_us (v1): what deciding on a group's limit needs, in one
// or two reads where ReadGroupCPU makes four (a caller that asks at every
// report for every pod of a node).
func ReadQuota(dir, version string) (quotaUsec int64, periodUsec uint64, err error) {
	if version != "v1" {
		b, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
		if err != nil {
			return 0, 0, err
		}
		return ParseCPUMax(b)
	}
	if quotaUsec, err = readInt(filepath.Join(dir, "cpu.cfs_quota_us")); err != nil || quotaUsec <= 0 {
		return quotaUsec, 0, err
	}
	p, err := readInt(filepath.Join(dir, "cpu.cfs_period_us"))
	return quotaUsec, uint64(p), err
}

func readCpuset(dir string) string {
	for _, name := range []string{"cpuset.cpus.effective", "cpuset.effective_cpus", "cpuset.cpus"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			if s := strings.TrimSpace(string(b)); s != "" {
				return s
			}
		}
	}
	return ""
}

func readInt(p string) (int64, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", p, err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p, err)
	}
	return v, nil
}

// ParseCPUList parses a cpuset list such as "0-3,6" into the CPU numbers it
// names, in order. CPU numbers go up to units.MaxCPUs-1; a range is checked
// before it is expanded, so "0-10000000" costs nothing.
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var seen [units.MaxCPUs]bool
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := cpuNumber(lo)
		if err != nil {
			return nil, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = cpuNumber(hi); err != nil {
				return nil, fmt.Errorf("cpu list %q: %w", s, err)
			}
			if b < a {
				return nil, fmt.Errorf("cpu list %q: range %q runs backwards", s, part)
			}
		}
		for c := a; c <= b; c++ {
			if !seen[c] {
				seen[c] = true
				n++
			}
		}
	}
	out := make([]int, 0, n)
	for c, ok := range seen {
		if ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// cpuNumber parses one CPU number of a cpuset list: decimal digits, below
// units.MaxCPUs.
func cpuNumber(s string) (int, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("bad cpu %q: want numbers and ranges such as 0-3,6", s)
	}
	if len(s) > 6 {
		return 0, fmt.Errorf("cpu %s: CPUs are numbered 0 to %d at most", s, units.MaxCPUs-1)
	}
	c, _ := strconv.Atoi(s)
	if c >= units.MaxCPUs {
		return 0, fmt.Errorf("cpu %d: CPUs are numbered 0 to %d at most", c, units.MaxCPUs-1)
	}
	return c, nil
}
