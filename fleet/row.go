package fleet

import (
	"fmt"
	"sort"
	"strings"

	"github.com/throttlelab/throttlelab/agent"
)

// Prediction is what the quota model predicts one limit does over the
// demand window: the throttled share of periods and the p99 added delay.
// Known is false when nothing was predicted (no limit, no samples).
type Prediction struct {
	Known          bool    `json:"known"`
	ThrottledRatio float64 `json:"throttled_periods_ratio"`
	DelayP99Ms     float64 `json:"added_delay_p99_ms"`
}

// Container is one running container's settings, advice and predictions.
// Millicore fields are 0 when unknown or unset (a container without a limit
// has LimitMilli 0).
type Container struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Container string `json:"container"`
	// OwnerKind and OwnerName are the pod's controller as the agent read
	// it (ReplicaSet, StatefulSet, DaemonSet, Job, or empty for a bare pod).
	OwnerKind string `json:"owner_kind,omitempty"`
	OwnerName string `json:"owner_name,omitempty"`
	Node      string `json:"node,omitempty"`
	Cgroup    string `json:"cgroup,omitempty"`

	LimitMilli   int64 `json:"limit_millicores"`
	RequestMilli int64 `json:"request_millicores"`
	BurstMilli   int64 `json:"burst_millicores"`
	// AdvisedLimitMilli is the smallest limit without burst that meets the
	// agent's target; AdvisedBurstMilli the smallest limit that meets it
	// with a burst equal to itself (0: a burst buys nothing).
	AdvisedLimitMilli int64 `json:"advised_limit_millicores"`
	AdvisedBurstMilli int64 `json:"advised_burst_millicores"`
	KrrMilli          int64 `json:"krr_millicores"`
	VPAMilli          int64 `json:"vpa_millicores"`
	// VPALimitMilli is the limit the VPA would set with VPAMilli as the
	// request: it keeps the container's limit:request ratio (0: no limit).
	// The VPA prediction is at VPAMilli, so exact only for ratio 1.
	VPALimitMilli int64   `json:"vpa_limit_millicores"`
	WindowSeconds float64 `json:"window_seconds"`
	// NotStationary: the agent judged the demand to have changed within
	// its window (advise's judgement); the advice rests on its worst block.
	NotStationary bool `json:"not_stationary,omitempty"`
	// StartupAdvised is the throttled share of periods the container's
	// start-up, which the agent kept apart from the advice, would have at
	// the advised limit (nil: the agent did not see it start).
	StartupAdvised *float64 `json:"startup_throttled_periods_ratio_advised,omitempty"`
	// Runtime is the runtime inside the container as its agent read it
	// (at discovery and on exec): the setting that decides its
	// parallelism, the parallelism found under its limit and the one to
	// set with the advised limit; nil when the agent knows none.
	Runtime *agent.RuntimeInfo `json:"runtime,omitempty"`

	Current Prediction `json:"current"`
	Advised Prediction `json:"advised"`
	Krr     Prediction `json:"krr"`
	VPA     Prediction `json:"vpa"`

	// Reason says why a field is missing (no limit, no samples yet).
	Reason string `json:"reason,omitempty"`

	// podLevel marks a pod's own group (its pod-level limit; Container is
	// ""), not a container: kept apart from the containers (ReadWithPods).
	podLevel bool

	// instance is the agent that measured the container: its Prometheus
	// job and instance labels (the target that exported it), or an agent's
	// URL; the key of Measured.Agents.
	instance string
}

// noteRuntime takes one of the agent's runtime series into c.Runtime:
// throttlelab_runtime_info's labels, throttlelab_runtime_parallelism's
// values (value=found|advised_limit|recommended). The setting to set is
// spelled from the info's setting name, as the agent spells it.
func (c *Container) noteRuntime(name string, labels map[string]string, v float64) {
	if c.Runtime == nil {
		c.Runtime = &agent.RuntimeInfo{}
	}
	r := c.Runtime
	n := int(v + 0.5)
	switch {
	case name == "throttlelab_runtime_info":
		r.Runtime, r.Version, r.Setting, r.Set = labels["runtime"], labels["version"], labels["setting"], labels["set"] == "true"
	case labels["value"] == "found":
		r.Found = n
	case labels["value"] == "advised_limit":
		r.AtAdvised = n
	case labels["value"] == "recommended":
		r.Recommended = n
	}
	r.RecommendedSetting = ""
	if r.Setting != "" && r.Recommended > 0 {
		r.RecommendedSetting = fmt.Sprintf("%s=%d", r.Setting, r.Recommended)
		if r.Runtime == "nginx" {
			r.RecommendedSetting = fmt.Sprintf("%s %d;", r.Setting, r.Recommended)
		}
	}
}

// Workload names the controller that owns a pod's template: a Deployment
// (found from its ReplicaSet's name), StatefulSet, DaemonSet, Job, CronJob,
// or Pod for a pod without one.
type Workload struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
}

func (w Workload) String() string { return w.Namespace + "/" + strings.ToLower(w.Kind) + "/" + w.Name }

// WorkloadOf returns the workload that owns c's pod. A ReplicaSet whose name
// ends in a pod-template-hash ("-" and 6 to 10 characters of the hash
// alphabet, as the Deployment controller makes it) belongs to the Deployment
// named before it; a Job whose name ends in "-" and digits, beside no
// other clue, stays a Job (a CronJob's Jobs carry the schedule time, which
// names no CronJob reliably).
func WorkloadOf(c *Container) Workload {
	w := Workload{Namespace: c.Namespace, Kind: c.OwnerKind, Name: c.OwnerName}
	switch {
	case c.OwnerKind == "" || c.OwnerName == "":
		w.Kind, w.Name = "Pod", c.Pod
	case c.OwnerKind == "ReplicaSet":
		if i := strings.LastIndexByte(c.OwnerName, '-'); i > 0 && isTemplateHash(c.OwnerName[i+1:]) {
			w.Kind, w.Name = "Deployment", c.OwnerName[:i]
		}
	}
	return w
}

// isTemplateHash reports whether s looks like a pod-template-hash: the
// Deployment controller writes it with rand.SafeEncodeString, whose alphabet
// has no vowels and no 0, 1, 3 (bcdfghjklmnpqrstvwxz2456789).
func isTemplateHash(s string) bool {
	if len(s) < 6 || len(s) > 10 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune("bcdfghjklmnpqrstvwxz2456789", rune(s[i])) {
			return false
		}
	}
	return true
}

// Merged is one container of a workload with its replicas merged: the
// worst replica (the one whose advised limit is highest, so that the
// advice covers every replica) stands for the workload, and the spread of
// the replicas' advised limits and current throttling says how far they
// differ.
type Merged struct {
	Workload  Workload `json:"workload"`
	Container string   `json:"container"`
	Replicas  int      `json:"replicas"`
	// Worst is the replica whose advice is taken (every prediction in it
	// is that replica's own, so exact for it; the other replicas need no
	// more, by construction).
	Worst *Container `json:"worst"`
	// AdvisedMinMilli and AdvisedMaxMilli span the replicas' advised
	// limits (equal for one replica).
	AdvisedMinMilli int64 `json:"advised_min_millicores"`
	AdvisedMaxMilli int64 `json:"advised_max_millicores"`
	// ThrottledMin and ThrottledMax span the replicas' predicted throttled
	// share at their current limits.
	ThrottledMin float64 `json:"current_throttled_periods_ratio_min"`
	ThrottledMax float64 `json:"current_throttled_periods_ratio_max"`
	// LimitsDiffer is set when the replicas run with different limits (a
	// rollout in progress, or a pod resized by hand).
	LimitsDiffer bool `json:"limits_differ,omitempty"`
	// Pods are the replicas, worst first.
	Pods []*Container `json:"pods"`
}

// Group merges the containers of each workload's replicas, sorted by
// namespace, kind, name and container. A replica without advice never
// stands for a workload that has a replica with advice.
func Group(cs []*Container) []*Merged {
	type key struct {
		w Workload
		c string
	}
	by := map[key]*Merged{}
	var order []key
	for _, c := range cs {
		k := key{WorkloadOf(c), c.Container}
		m := by[k]
		if m == nil {
			m = &Merged{Workload: k.w, Container: c.Container}
			by[k] = m
			order = append(order, k)
		}
		m.Pods = append(m.Pods, c)
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.w.Namespace != b.w.Namespace {
			return a.w.Namespace < b.w.Namespace
		}
		if a.w.Kind != b.w.Kind {
			return a.w.Kind < b.w.Kind
		}
		if a.w.Name != b.w.Name {
			return a.w.Name < b.w.Name
		}
		return a.c < b.c
	})
	out := make([]*Merged, 0, len(order))
	for _, k := range order {
		m := by[k]
		sort.SliceStable(m.Pods, func(i, j int) bool { return worse(m.Pods[i], m.Pods[j]) })
		m.Replicas, m.Worst = len(m.Pods), m.Pods[0]
		first := true
		for _, c := range m.Pods {
			if c.LimitMilli != m.Worst.LimitMilli {
				m.LimitsDiffer = true
			}
			if c.AdvisedLimitMilli > 0 {
				if m.AdvisedMinMilli == 0 || c.AdvisedLimitMilli < m.AdvisedMinMilli {
					m.AdvisedMinMilli = c.AdvisedLimitMilli
				}
				m.AdvisedMaxMilli = max(m.AdvisedMaxMilli, c.AdvisedLimitMilli)
			}
			if c.Current.Known {
				if first || c.Current.ThrottledRatio < m.ThrottledMin {
					m.ThrottledMin = c.Current.ThrottledRatio
				}
				m.ThrottledMax = max(m.ThrottledMax, c.Current.ThrottledRatio)
				first = false
			}
		}
		out = append(out, m)
	}
	return out
}

// worse orders replicas: advised first, then the higher advised limit,
// then the higher throttled share now, then by pod name.
func worse(a, b *Container) bool {
	if (a.AdvisedLimitMilli > 0) != (b.AdvisedLimitMilli > 0) {
		return a.AdvisedLimitMilli > 0
	}
	if a.AdvisedLimitMilli != b.AdvisedLimitMilli {
		return a.AdvisedLimitMilli > b.AdvisedLimitMilli
	}
	if a.Current.ThrottledRatio != b.Current.ThrottledRatio {
		return a.Current.ThrottledRatio > b.Current.ThrottledRatio
	}
	return a.Pod < b.Pod
}
