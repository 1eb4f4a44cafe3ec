package server

import (
	"fmt"
	"math"
	"strconv"

	"github.com/throttlelab/throttlelab/cgroup"
)

// ResolveGOMAXPROCS turns the --gomaxprocs setting into a number and says where it
// came from. spec is "" (all host CPUs, like a thread-per-request server that
// ignores its limit), a positive number, or "limit": the group's CPU limit rounded
// up (ceil of quota/period, as automaxprocs-style tuning and Go's container-aware
// default do), at least 1 and at most the CPUs the process may run on (affinity).
// With no limit, "limit" falls back to the affinity count.
func ResolveGOMAXPROCS(spec string, hostCPUs, affinityCPUs int, limits *cgroup.CPULimits) (int, string, error) {
	switch spec {
	case "", "host":
		return hostCPUs, "host CPUs", nil
	case "limit":
		if limits == nil || limits.LimitCores <= 0 {
			return affinityCPUs, "limit (none set: CPUs in affinity mask)", nil
		}
		n := int(math.Ceil(limits.LimitCores - 1e-9))
		n = max(1, min(n, affinityCPUs))
		return n, fmt.Sprintf("limit (%.3g CPUs)", limits.LimitCores), nil
	}
	n, err := strconv.Atoi(spec)
	if err != nil || n < 1 {
		return 0, "", fmt.Errorf("--gomaxprocs %q: want a positive number, \"limit\" or \"host\"", spec)
	}
	return n, "flag", nil
}
