package local

import (
	"os"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/record"
)

// ReadEnv describes this machine, and its cgroups as m sees them (if not nil).
func ReadEnv(m *cgroup.Manager) record.Env {
	e := record.Env{GoVersion: runtime.Version(), Backend: "local", Started: time.Now().UTC()}
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
