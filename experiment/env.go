package experiment

import (
	"os"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/throttlelab/throttlelab/cgroup"
)

// Env describes the machine a results directory was measured on.
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
}

// ReadEnv describes this machine.
func ReadEnv(version string, m *cgroup.Manager) Env {
	e := Env{GoVersion: runtime.Version(), Version: version, Backend: "local", Started: time.Now().UTC()}
	e.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		e.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if m != nil {
		e.CgroupMode, e.CPUController, e.BurstSupport = string(m.Layout().Mode), m.Version(), m.BurstSupported()
	}
	if n, err := cgroup.OnlineCPUs("/"); err == nil {
		e.Cores = n
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				e.CPUModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return e
}
