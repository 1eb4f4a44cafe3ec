package local

import (
	"os"
	"runtime"
	"strconv"
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
		e.ThrottleModel = &record.ThrottleModel{CPUController: m.Version(), BurstSupported: m.BurstSupported(), DefaultPeriodUsec: 100000}
		if b, err := os.ReadFile("/proc/sys/kernel/sched_cfs_bandwidth_slice_us"); err == nil {
			e.ThrottleModel.SliceUsec, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		}
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
