package record

import "github.com/throttlelab/throttlelab/cgroup"

// PodGroupFile is a run's record of its pod-level group, for a config with
// a pod block (in the run's directory).
const PodGroupFile = "pod-group.json"

// PodGroup is what a run's pod-level group (the kubelet's pod cgroup, or the
// local backend's pod-RUN-CONFIG group, holding the pod-level limit over
// the instances' groups) did over the load.
type PodGroup struct {
	Run  string `json:"run"`
	Pod  string `json:"pod"`
	Node string `json:"node,omitempty"`
	// Group is the pod cgroup's path.
	Group      string `json:"group"`
	QuotaUsec  int64  `json:"quota_usec"`
	PeriodUsec uint64 `json:"period_usec"`
	// CPUStat is the group's counts over the window (the kubernetes
	// backend's, from cAdvisor, have no nr_bursts or pressure).
	CPUStat cgroup.CPUStat `json:"cpu_stat"`
	// UsageCores is the group's use over the load's duration.
	UsageCores float64 `json:"usage_cores"`
	// WindowSec is the time between the two readings: the load's on the
	// local backend; on the kubernetes backend cAdvisor's (it refreshes
	// every 10-15 s), the load and some idle time around it, never the
	// warm-up.
	WindowSec float64 `json:"window_sec"`
}
