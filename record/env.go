package record

import (
	"time"
)

// Env describes where a results directory was made: the machine it was
// measured on, or the simulated one. It is env.json.
type Env struct {
	Hostname      string `json:"hostname"`
	Kernel        string `json:"kernel"`
	CgroupMode    string `json:"cgroup_mode"`
	CPUController string `json:"cpu_controller"`
	BurstSupport  bool   `json:"burst_supported"`
	CPUModel      string `json:"cpu_model"`
	Cores         int    `json:"cores"`
	GoVersion     string `json:"go_version"`
	Version       string `json:"throttlelab_version"`
	Backend       string `json:"backend"`
	// GOMAXPROCS is each config's GOMAXPROCS policy (host, automaxprocs, go,
	// N, or the deprecated limit).
	GOMAXPROCS map[string]string `json:"gomaxprocs_policy,omitempty"`
	// ThrottleModel is how this kernel enforces a CPU limit.
	ThrottleModel *ThrottleModel `json:"throttle_model,omitempty"`
	// LoadGen is the group the load generator ran in (nil: the group the
	// runner was started in, as results before it had one of its own).
	LoadGen *LoadGenGroup `json:"loadgen_group,omitempty"`
	// BurnIterationsPerMs is the burn loop's measured speed (iterations per
	// ms of CPU) that every instance used.
	BurnIterationsPerMs float64   `json:"burn_iterations_per_ms,omitempty"`
	Started             time.Time `json:"started"`
	// Kubernetes describes the cluster of a kubernetes-backend run.
	Kubernetes *KubeEnv `json:"kubernetes,omitempty"`
}

// ThrottleModel describes CFS bandwidth control as the host (or the
// simulator) has it.
type ThrottleModel struct {
	// CPUController is the cgroup version of the cpu controller (v1, v2).
	CPUController string `json:"cpu_controller"`
	// BurstSupported says whether the kernel has CPU burst.
	BurstSupported bool `json:"burst_supported"`
	// DefaultPeriodUsec is the period of a limit that names none.
	DefaultPeriodUsec uint64 `json:"default_period_usec"`
	// SliceUsec is the runtime a CPU takes from a group's quota at a time
	// (sched_cfs_bandwidth_slice_us); a period can hold the quota plus what
	// CPUs kept of the last one's slices.
	SliceUsec uint64 `json:"bandwidth_slice_usec,omitempty"`
}

// LoadGenGroup is the load generator's cgroup and its fixed weight.
type LoadGenGroup struct {
	// Path is the group's path in the cpu hierarchy.
	Path   string `json:"path"`
	Shares uint64 `json:"shares"`
	Weight uint64 `json:"weight"`
}
