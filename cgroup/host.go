package cgroup

import (
	"bytes"
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

// ParseHostBusy reads the first line of /proc/stat ("cpu  user nice system
// idle iowait irq softirq steal ...") and returns the CPU time all CPUs spent
// on anything but idling: user, nice, system, irq, softirq, and steal (time
// the hypervisor gave to another guest, lost to this host all the same).
// Guest time is already in user and nice.
func ParseHostBusy(b []byte) (time.Duration, error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("not a /proc/stat cpu line: %.60q", line)
	}
	var busy uint64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system irq softirq steal
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat cpu field %d: %w", i, err)
		}
		busy += v
	}
	return time.Duration(busy) * (time.Second / userHZ), nil
}

// HostBusy returns the CPU time the whole host has spent busy since boot
// (ParseHostBusy of root/proc/stat).
func HostBusy(root string) (time.Duration, error) {
	p := filepath.Join(root, "proc/stat")
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", p, err)
	}
	d, err := ParseHostBusy(b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p, err)
	}
	return d, nil
}
