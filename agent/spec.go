package agent

import (
	"github.com/throttlelab/throttlelab/units"
	"github.com/throttlelab/throttlelab/watch"
)

// SpecCPU is a container's CPU request and limit as its pod's spec gives
// them, in millicores; the Has fields say whether the spec sets each. The
// agent exports them beside what the container's cgroup has (cpu.max or
// the CFS quota and period; the weight or shares read back to a request),
// so that an in-place resize shows: the spec changes at once, the cgroup
// once the kubelet has applied it, and a resize it cannot apply leaves them
// apart.
type SpecCPU struct {
	RequestMilli, LimitMilli int64
	HasRequest, HasLimit     bool
}

// specCPUOf reads a container spec's cpu request and limit quantities
// ("" when unset; one that does not parse counts as unset). Kubernetes
// sets a request left out to the limit, as the API server does.
func specCPUOf(request, limit string) SpecCPU {
	var s SpecCPU
	if m, _, err := units.ParseMilliCPU(limit); limit != "" && err == nil {
		s.LimitMilli, s.HasLimit = m, true
	}
	if m, _, err := units.ParseMilliCPU(request); request != "" && err == nil {
		s.RequestMilli, s.HasRequest = m, true
	} else if request == "" && s.HasLimit {
		s.RequestMilli, s.HasRequest = s.LimitMilli, true
	}
	return s
}

// specOf returns the spec's CPU resources of a container, from the last
// pod list (Config.Owners); ok is false without one, or for a container
// the list does not name.
func (a *Agent) specOf(namespace, pod, container string) (SpecCPU, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.specs[watch.PodName{Namespace: namespace, Name: pod}][container]
	return s, ok
}
