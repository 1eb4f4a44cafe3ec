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
	// GOMAXPROCS is each config's GOMAXPROCS policy (host, N or limit).
	GOMAXPROCS map[string]string `json:"gomaxprocs_policy,omitempty"`
	// BurnIterationsPerMs is the burn loop's measured speed (iterations per
	// ms of CPU) that every instance used.
	BurnIterationsPerMs float64   `json:"burn_iterations_per_ms,omitempty"`
	Started             time.Time `json:"started"`
	// Kubernetes describes the cluster of a kubernetes-backend run.
	Kubernetes *KubeEnv `json:"kubernetes,omitempty"`
}
