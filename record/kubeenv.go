package record

// KubeEnv describes the cluster a kubernetes-backend run was measured on:
// env.json's "kubernetes".
type KubeEnv struct {
	ServerVersion string `json:"server_version"`
	Context       string `json:"context,omitempty"`
	Namespace     string `json:"namespace"`
	Image         string `json:"image"`
	// HostNetwork marks a test rig's run (pods on the node's network).
	HostNetwork bool       `json:"host_network,omitempty"`
	Nodes       []KubeNode `json:"nodes"`
	// Pods are the server pods of every run, as the API server and the
	// servers themselves saw them.
	Pods []KubePod `json:"pods,omitempty"`
}

// KubeNode is one node of the cluster, from its status.
type KubeNode struct {
	Name             string `json:"name"`
	Kernel           string `json:"kernel"`
	OSImage          string `json:"os_image"`
	ContainerRuntime string `json:"container_runtime"`
	Kubelet          string `json:"kubelet"`
	CPUs             int64  `json:"cpus"`
}

// KubePod is one server pod of one run: where it ran, its QoS class, and
// the quota and weight its container's cgroup really had (read by the
// server from inside).
type KubePod struct {
	Run           string  `json:"run"`
	Pod           string  `json:"pod"`
	Node          string  `json:"node"`
	QoS           string  `json:"qos"`
	CgroupVersion string  `json:"cgroup_version"`
	Group         string  `json:"group"`
	QuotaUsec     int64   `json:"quota_usec"`
	PeriodUsec    uint64  `json:"period_usec"`
	Shares        uint64  `json:"shares,omitempty"`
	Weight        uint64  `json:"weight,omitempty"`
	LimitCores    float64 `json:"limit_cores"`
}
