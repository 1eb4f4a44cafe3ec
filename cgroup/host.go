package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
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
