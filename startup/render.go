package startup

import (
	"fmt"
	"math"
)

// VPAStartupBoost is the VPA's startupBoost (AEP-7862), as it goes under
// spec.startupBoost or a container policy: the boost as a quantity added
// to the container's CPU, for DurationSeconds. The VPA counts the duration
// from the pod's Ready: without a readiness probe (Ready at once) it
// covers the start-up as sized; with a probe that turns Ready when the
// start-up ends, 0 would do.
type VPAStartupBoost struct {
	CPU VPACPUBoost `json:"cpu"`
}

// VPACPUBoost is startupBoost.cpu.
type VPACPUBoost struct {
	Type            string `json:"type"`
	Quantity        string `json:"quantity"`
	DurationSeconds int32  `json:"durationSeconds"`
}

// VPA renders b as the VPA's startupBoost; nil when no boost is needed.
func (b Boost) VPA() *VPAStartupBoost {
	if !b.Needed {
		return nil
	}
	return &VPAStartupBoost{CPU: VPACPUBoost{Type: "Quantity", Quantity: fmt.Sprintf("%dm", b.BoostMilli-b.LimitMilli), DurationSeconds: b.DurationSeconds}}
}

// StartupCPUBoost is a kube-startup-cpu-boost object
// (autoscaling.x-k8s.io/v1alpha1): the container's CPU requests and
// limits raised by a percentage for a fixed time from the pod's creation.
type StartupCPUBoost struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   ObjectMeta        `json:"metadata"`
	Selector   LabelSelector     `json:"selector"`
	Spec       StartupCPUBoostSp `json:"spec"`
}

// ObjectMeta is the object's name and namespace.
type ObjectMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// LabelSelector selects the pods boosted.
type LabelSelector struct {
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// StartupCPUBoostSp is the object's spec.
type StartupCPUBoostSp struct {
	ResourcePolicy ResourcePolicy `json:"resourcePolicy"`
	DurationPolicy DurationPolicy `json:"durationPolicy"`
}

// ResourcePolicy is spec.resourcePolicy.
type ResourcePolicy struct {
	ContainerPolicies []ContainerPolicy `json:"containerPolicies"`
}

// ContainerPolicy is one container's boost.
type ContainerPolicy struct {
	ContainerName      string        `json:"containerName"`
	PercentageIncrease PercentageInc `json:"percentageIncrease"`
}

// PercentageInc is percentageIncrease.
type PercentageInc struct {
	Value int64 `json:"value"`
}

// DurationPolicy is spec.durationPolicy.
type DurationPolicy struct {
	FixedDuration FixedDuration `json:"fixedDuration"`
}

// FixedDuration is durationPolicy.fixedDuration.
type FixedDuration struct {
	Unit  string `json:"unit"`
	Value int32  `json:"value"`
}

// Target names what a StartupCPUBoost boosts.
type Target struct {
	Name, Namespace, Container string
	MatchLabels                map[string]string
}

// KubeStartupCPUBoost renders b as a kube-startup-cpu-boost object for t:
// the percentage (rounded up) that raises the limit b was sized against
// to the boost or above; nil when no boost is needed. The controller
// removes CPU limits while it boosts by default (REMOVE_LIMITS): then the
// start-up gets at least the boost.
func (b Boost) KubeStartupCPUBoost(t Target) *StartupCPUBoost {
	if !b.Needed || b.LimitMilli <= 0 {
		return nil
	}
	pct := int64(math.Ceil(float64(b.BoostMilli-b.LimitMilli)*100/float64(b.LimitMilli) - 1e-9))
	return &StartupCPUBoost{
		APIVersion: "autoscaling.x-k8s.io/v1alpha1", Kind: "StartupCPUBoost",
		Metadata: ObjectMeta{Name: t.Name, Namespace: t.Namespace},
		Selector: LabelSelector{MatchLabels: t.MatchLabels},
		Spec: StartupCPUBoostSp{
			ResourcePolicy: ResourcePolicy{ContainerPolicies: []ContainerPolicy{{ContainerName: t.Container, PercentageIncrease: PercentageInc{Value: pct}}}},
			DurationPolicy: DurationPolicy{FixedDuration: FixedDuration{Unit: "Seconds", Value: b.DurationSeconds}},
		},
	}
}
