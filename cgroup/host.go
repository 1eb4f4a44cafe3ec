package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// OnlineCPUs returns the number of online CPUs of the host, from
// root/sys/devices/system/cpu/online: all of them, whatever the calling process's
// cpuset or affinity.
func OnlineCPUs(root string) (int, error) {
	return countCPUs(root, "online")
}

// countCPUs counts the CPUs of root/sys/devices/system/cpu/list (online,
// possible, present).
func countCPUs(root, list string) (int, error) {
	p := filepath.Join(root, "sys/devices/system/cpu", list)
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", p, err)
	}
	cpus, err := ParseCPUList(string(b))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p, err)
	}
	if len(cpus) == 0 {
		return 0, fmt.Errorf("%s lists no CPU", p)
	}
	return len(cpus), nil
}

// userHZ is the unit of /proc/stat's CPU times: USER_HZ, 100 on every
// architecture Linux runs on today (the kernel converts to it for userspace
// whatever its own HZ).
const userHZ = 100

// ParseHostIdle reads /proc/stat and returns the time all CPUs together
// spent idle (idle and iowait of the first, "cpu", line) and the number of
// CPUs it counts (its "cpuN" lines). A tickless kernel measures idle spells
// exactly, where user and system time are sampled at ticks (and a task that
// wakes with the tick is counted busy for all of it), so a host's busy time
// over an interval is better the CPUs' time less their idle time than the
// sum of the busy fields.
func ParseHostIdle(b []byte) (idle time.Duration, cpus int, err error) {
	lines := strings.Split(string(b), "\n")
	f := strings.Fields(lines[0])
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("not a /proc/stat cpu line: %.60q", lines[0])
	}
	for _, i := range []int{4, 5} { // idle, iowait
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat cpu field %d: %w", i, err)
		}
		idle += time.Duration(v) * (time.Second / userHZ)
	}
	for _, l := range lines[1:] {
		if name, _, ok := strings.Cut(l, " "); ok && strings.HasPrefix(name, "cpu") && len(name) > 3 {
			cpus++
		}
	}
	if cpus == 0 {
		return 0, 0, errors.New("/proc/stat lists no cpuN line")
	}
	return idle, cpus, nil
}

// HostIdle is ParseHostIdle of root/proc/stat.
func HostIdle(root string) (idle time.Duration, cpus int, err error) {
	p := filepath.Join(root, "proc/stat")
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, 0, fmt.Errorf("reading %s: %w", p, err)
	}
	idle, cpus, err = ParseHostIdle(b)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", p, err)
	}
	return idle, cpus, nil
}

// HostMark is the host's CPU state at one instant, as two marks need it to
// tell how much CPU other work took between them (OtherCores).
type HostMark struct {
	// At is when the mark was taken.
	At time.Time
	// CPUs is the number of CPUs /proc/stat counted, Idle their idle and
	// iowait time together (ParseHostIdle).
	CPUs int
	Idle time.Duration
	// Ours is the cumulative CPU time of the work being measured (the
	// run's groups), which is not "other".
	Ours time.Duration
}

// MarkHost reads root/proc/stat now; the caller adds Ours.
func MarkHost(root string) (HostMark, error) {
	idle, cpus, err := HostIdle(root)
	return HostMark{At: time.Now(), CPUs: cpus, Idle: idle}, err
}

// OtherCores is the mean CPU (cores) other work used between two marks: the
// CPUs' time less their idle time less ours, at least 0 (/proc/stat counts
// idle in 10 ms ticks, so a quiet host can come out a hair below). ok is
// false when it cannot be known, which is not the same as none: a CPU went
// on or off line in between, or the marks are not in order. The one rule
// for host_other_cores.
func OtherCores(before, after HostMark) (cores float64, ok bool) {
	wall := after.At.Sub(before.At)
	if wall <= 0 || after.CPUs != before.CPUs || before.CPUs == 0 {
		return 0, false
	}
	busy := time.Duration(after.CPUs)*wall - (after.Idle - before.Idle)
	return max(0, float64(busy-(after.Ours-before.Ours))/float64(wall)), true
}
