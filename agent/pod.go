package agent

import (
	"math"

	"github.com/throttlelab/throttlelab/watch"
)

// A pod with a pod-level CPU limit (Kubernetes 1.34+: spec.resources) has
// one quota over the summed demand of its containers, on the pod's own
// cgroup. The agent summarises that group like a container's: read at
// every sample by need, its demand (the kernel's sum of its containers')
// kept at the sampling step, its advice on the same ladder and its
// predictions checked against the pod cgroup's own counts (the audit). A
// pod without a pod-level limit is not summarised: its group is read at
// reports only, as before, and its quota once per Discover.

// KindPod is Names.Kind of a pod's own group.
const KindPod = "pod"

// PicksPod implements watch.PodPolicy: a pod group with a pod-level limit
// (podLevel) is read at every sample and summarised.
func (p policy) PicksPod(id watch.Identity, path string, limitCores float64) bool {
	a := p.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.podLevel(id, limitCores) {
		delete(a.podGroups, path)
		return false
	}
	if a.podGroups == nil {
		a.podGroups = map[string]bool{}
	}
	a.podGroups[path] = true
	return true
}

// podLevel reports whether a pod group whose quota is limitCores (0: none)
// has a pod-level limit; a.mu is held. Without pod-level resources the
// kubelet sets a pod's quota to the sum of its containers' limits when
// every container has one (and none otherwise): such a quota adds nothing
// to theirs. A pod-level limit is any other quota: some container without
// a limit, or the containers' limits summing to another figure. A pod whose
// containers the agent has not read yet is decided at the next Discover
// (at the report that first reads them).
func (a *Agent) podLevel(id watch.Identity, limitCores float64) bool {
	if limitCores <= 0 || id.Kind != watch.KindPod || id.PodUID == "" {
		return false
	}
	sum, n := 0.0, 0
	for _, c := range a.containers {
		if c.id.Kind != watch.KindContainer || c.id.PodUID != id.PodUID {
			continue
		}
		c.mu.Lock()
		l := c.last.LimitCores
		read := c.last.Path != ""
		c.mu.Unlock()
		if !read {
			return false // not read yet: decided at the next Discover
		}
		if l == nil {
			return true // a container without a limit: the pod's binds over it
		}
		sum += *l
		n++
	}
	if n == 0 {
		return false // no container read yet: decided at the next Discover
	}
	return math.Abs(sum-limitCores) > 0.0005 // half a millicore: the quota's rounding
}

// selects reports whether the agent summarises the group at path:
// Config.Select's groups and the pods with a pod-level limit; a.mu is held.
func (a *Agent) selects(id watch.Identity, path string) bool {
	return a.cfg.Select(id) || (id.Kind == watch.KindPod && a.podGroups[path])
}
