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
	p := filepath.Join(root, "sys/devices/system/cpu/online")
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
