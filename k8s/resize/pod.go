package resize

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/throttlelab/throttlelab/units"
)

// The feature gates a pod-level resize needs: PodLevelResources (the
// pod's spec.resources; beta and on by default from Kubernetes 1.34) and
// InPlacePodLevelResourcesVerticalScaling (changing it through pods/resize;
// alpha in 1.35, beta and on by default from 1.36).
const (
	GatePodLevel       = "PodLevelResources"
	GatePodLevelResize = "InPlacePodLevelResourcesVerticalScaling"
)

// PodLevelPatch is the pods/resize patch that sets a pod's pod-level CPU
// limit (spec.resources.limits.cpu) to toMilli.
func PodLevelPatch(toMilli int64) []byte {
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"resources": map[string]any{"limits": map[string]string{"cpu": units.FormatMilliCPU(toMilli)}}}})
	return b
}

// podLimitMilli is the pod's pod-level CPU limit (0: none).
func podLimitMilli(p *corev1.Pod) int64 {
	if p.Spec.Resources == nil {
		return 0
	}
	if q, ok := p.Spec.Resources.Limits[corev1.ResourceCPU]; ok {
		return q.MilliValue()
	}
	return 0
}

// validatePod is validate for a pod-level row (Container ""): the pod has
// a pod-level limit, and it is the one the advice was made for
// (FromLimitMilli; -1: any).
func validatePod(pod *corev1.Pod, r Row) string {
	now := podLimitMilli(pod)
	switch {
	case now == 0:
		return fmt.Sprintf("the pod has no pod-level CPU limit (spec.resources): set one in its template first (Kubernetes 1.34+, feature gate %s; an API server without it drops the field)", GatePodLevel)
	case r.FromLimitMilli >= 0 && now != r.FromLimitMilli:
		return fmt.Sprintf("resized by someone else meanwhile: the pod-level limit is now %s, the advice was made at %s: run advise again",
			units.FormatMilliCPU(now), units.FormatMilliCPU(r.FromLimitMilli))
	}
	return ""
}

// podAnswer checks the pod the API server answered a pod-level resize
// with: an API server whose pods/resize does not know pod-level resources
// accepts the patch and leaves spec.resources as it was (the field
// dropped), which must not be taken for applied.
func podAnswer(got *corev1.Pod, r Row) string {
	if now := podLimitMilli(got); now != r.ToLimitMilli {
		return fmt.Sprintf("the API server dropped the pod-level limit (the pod still has %s, not %s): it does not resize pod-level resources in place; that needs Kubernetes 1.36+ with feature gate %s on (beta, on by default from 1.36)",
			milliOrNone(now), units.FormatMilliCPU(r.ToLimitMilli), GatePodLevelResize)
	}
	return ""
}

// podRefusal says why the API server refused a pod-level resize, in one
// line: a pod-level limit under the containers' limits, or pods/resize
// refusing spec.resources (the gate off).
func podRefusal(err error, pod *corev1.Pod, r Row) string {
	st, ok := err.(apierrors.APIStatus)
	if !ok || !apierrors.IsInvalid(err) {
		return ""
	}
	var fields []string
	forbidden := false
	if d := st.Status().Details; d != nil {
		for _, c := range d.Causes {
			fields = append(fields, c.Field)
			// A gate that is off forbids the resize as a whole (no field).
			forbidden = forbidden || c.Type == metav1.CauseTypeForbidden
		}
	}
	f := strings.Join(fields, " ")
	switch {
	case strings.Contains(f, "spec.resources") && pod != nil && sumLimits(pod) > r.ToLimitMilli:
		return fmt.Sprintf("the API server refused a pod-level limit of %s under its containers' limits summed (%s): give the pod at least %s, or lower the containers' limits",
			units.FormatMilliCPU(r.ToLimitMilli), units.FormatMilliCPU(sumLimits(pod)), units.FormatMilliCPU(sumLimits(pod)))
	case forbidden:
		return fmt.Sprintf("the API server refused to resize the pod-level limit in place: that needs Kubernetes 1.36+ with feature gate %s on (beta, on by default from 1.36; alpha and off in 1.35)", GatePodLevelResize)
	}
	return ""
}

// sumLimits is the pod's containers' CPU limits summed (regular and
// sidecar containers).
func sumLimits(p *corev1.Pod) int64 {
	var s int64
	for _, c := range p.Spec.Containers {
		s += c.Resources.Limits.Cpu().MilliValue()
	}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			s += c.Resources.Limits.Cpu().MilliValue()
		}
	}
	return s
}

func milliOrNone(m int64) string {
	if m == 0 {
		return "none"
	}
	return units.FormatMilliCPU(m)
}

// WorkloadPods lists the running pods of workload name in namespace ns:
// the pods whose controller is a ReplicaSet named name-HASH (a
// Deployment's) or a StatefulSet, DaemonSet, Job or ReplicaSet named name.
// None is a *NoPods error.
func WorkloadPods(ctx context.Context, cfg *rest.Config, ns, name string) ([]string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of namespace %s: %w", ns, err)
	}
	var out []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		ref := metav1.GetControllerOf(&p)
		if ref == nil {
			continue
		}
		hash, ok := strings.CutPrefix(ref.Name, name+"-")
		if ref.Name == name || (ref.Kind == "ReplicaSet" && ok && hash != "" && !strings.Contains(hash, "-")) {
			out = append(out, p.Name)
		}
	}
	if len(out) == 0 {
		return nil, &NoPods{Namespace: ns, Workload: name}
	}
	return out, nil
}

// NoPods is WorkloadPods' error when the workload has no running pod.
type NoPods struct{ Namespace, Workload string }

func (e *NoPods) Error() string {
	return fmt.Sprintf("no running pod of workload %s in namespace %s (a Deployment's ReplicaSet %s-HASH, or a StatefulSet, DaemonSet or Job %s)", e.Workload, e.Namespace, e.Workload, e.Workload)
}
