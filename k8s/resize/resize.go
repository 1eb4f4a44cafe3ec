// Package resize changes the CPU limits of running pods in place, through
// the pods/resize subresource, all or nothing at validation (advise
// --prometheus/--agent --apply). It is apart from the experiment backend in
// k8s: a resize knows pods and patches, not experiments.
package resize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/throttlelab/throttlelab/units"
)

// ErrNotApplied: some rows failed validation, so no row was applied (or, in
// a dry run, some rows would fail).
var ErrNotApplied = errors.New("not every resize validated")

// Row is one container to resize in place. (The plan is fleet's,
// fleet.PlanResizes; this package takes plain rows so that it does not
// import the advice, and through it the simulator.)
type Row struct {
	Namespace, Pod, Container string
	// FromLimitMilli is the CPU limit the container must still run: the
	// advice was made for it.
	FromLimitMilli int64
	// Patch is the strategic merge patch for pods/resize
	// (fleet.Resize.ResizePatch).
	Patch []byte
	// Skip, if set, says why the row is not resized.
	Skip string
	// ToLimitMilli is, for a pod-level row (Container ""), the pod-level
	// limit the patch sets (PodLevelPatch): the API server's answer is
	// read back against it. FromLimitMilli -1 there: any current limit.
	ToLimitMilli int64
}

// Result is what became of one row.
type Result struct {
	// Status is "applied", "dry run: ok", "skipped", "failed" or "not applied".
	Status string `json:"status"`
	// Reason says why a row failed, or was skipped or held back.
	Reason string `json:"reason,omitempty"`
}

// Resize resizes running pods in place through the pods/resize subresource
// (Kubernetes 1.35+), all or nothing at validation: every row is first
// checked (the pod still runs the limit the advice was made for, and a
// server-side dry run of its patch passes: RBAC, validation, the QoS
// class), and only if every row passes are the patches sent for real, with
// apply set. Each patch carries the pod's resourceVersion read at
// validation, so a pod changed by someone else in between is refused by
// the API server (a conflict) rather than overwritten. A pod patch is
// atomic; the API has no transaction over several pods, so rows applied
// before such a conflict stay applied, and the conflict's row says so.
func Resize(ctx context.Context, cfg *rest.Config, rows []Row, apply bool) ([]Result, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	out := make([]Result, len(rows))
	rvs := make([]string, len(rows))
	failed := 0
	for i, r := range rows {
		if r.Skip != "" {
			out[i].Status, out[i].Reason = "skipped", r.Skip
			continue
		}
		rv, why := validate(ctx, cs, r)
		if why != "" {
			out[i].Status, out[i].Reason = "failed", why
			failed++
			continue
		}
		rvs[i] = rv
		if why := patchResize(ctx, cs, r, rv, true); why != "" {
			out[i].Status, out[i].Reason = "failed", why
			failed++
			continue
		}
		out[i].Status = "dry run: ok"
	}
	if failed > 0 {
		for i := range out {
			if out[i].Status == "dry run: ok" {
				out[i].Status = "not applied"
				out[i].Reason = fmt.Sprintf("%d other row(s) failed validation: nothing is applied until every row passes", failed)
				if !apply {
					out[i].Reason = "the dry run passed, but other rows failed: applying would apply nothing"
				}
			}
		}
		return out, fmt.Errorf("%d of %d resizes failed validation: %w (nothing was applied)", failed, len(rows), ErrNotApplied)
	}
	if !apply {
		return out, nil
	}
	for i := range out {
		if out[i].Status != "dry run: ok" {
			continue
		}
		if why := patchResize(ctx, cs, rows[i], rvs[i], false); why != "" {
			out[i].Status, out[i].Reason = "failed", why
			failed++
			continue
		}
		out[i].Status = "applied"
	}
	if failed > 0 {
		return out, fmt.Errorf("%d of %d resizes failed while applying (the others were applied): %w", failed, len(rows), ErrNotApplied)
	}
	return out, nil
}

// validate reads the pod and checks the row still holds: the container
// runs the limit the advice was made for. It returns the pod's
// resourceVersion, or why not.
func validate(ctx context.Context, cs kubernetes.Interface, r Row) (string, string) {
	pod, err := cs.CoreV1().Pods(r.Namespace).Get(ctx, r.Pod, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", "pod gone (deleted or replaced since the advice): run advise again"
	case apierrors.IsForbidden(err):
		return "", "RBAC forbids reading the pod: grant get on pods in namespace " + r.Namespace
	case err != nil:
		return "", "reading the pod: " + err.Error()
	}
	if r.Container == "" {
		if why := validatePod(pod, r); why != "" {
			return "", why
		}
		return pod.ResourceVersion, ""
	}
	var c *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == r.Container {
			c = &pod.Spec.Containers[i]
		}
	}
	if c == nil {
		return "", "the pod has no container " + r.Container
	}
	now := int64(0)
	if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		now = q.MilliValue()
	}
	if now != r.FromLimitMilli {
		return "", fmt.Sprintf("resized by someone else meanwhile: the limit is now %s, the advice was made at %s: run advise again",
			units.FormatMilliCPU(now), units.FormatMilliCPU(r.FromLimitMilli))
	}
	return pod.ResourceVersion, ""
}

// patchResize sends the row's patch to pods/resize with rv as precondition
// (a dry run with dryRun set) and returns why it failed, or "".
func patchResize(ctx context.Context, cs kubernetes.Interface, r Row, rv string, dryRun bool) string {
	var p map[string]any
	if err := json.Unmarshal(r.Patch, &p); err != nil {
		return "the patch is not JSON: " + err.Error()
	}
	p["metadata"] = map[string]any{"resourceVersion": rv}
	body, _ := json.Marshal(p)
	opt := metav1.PatchOptions{}
	if dryRun {
		opt.DryRun = []string{metav1.DryRunAll}
	}
	got, err := cs.CoreV1().Pods(r.Namespace).Patch(ctx, r.Pod, types.StrategicMergePatchType, body, opt, "resize")
	if r.Container == "" && apierrors.IsInvalid(err) {
		if pod, gerr := cs.CoreV1().Pods(r.Namespace).Get(ctx, r.Pod, metav1.GetOptions{}); gerr == nil {
			if why := podRefusal(err, pod, r); why != "" {
				return why
			}
		}
	}
	var st apierrors.APIStatus
	switch {
	case err == nil && r.Container == "":
		return podAnswer(got, r)
	case err == nil:
		return ""

	case apierrors.IsConflict(err):
		return "resized or changed by someone else meanwhile (resourceVersion " + rv + " is stale): run advise again"
	case apierrors.IsForbidden(err):
		return "RBAC forbids resizing: grant patch on pods/resize in namespace " + r.Namespace + " (" + err.Error() + ")"
	case apierrors.IsNotFound(err):
		return "pod gone, or the API server has no pods/resize (Kubernetes 1.35+ needed): " + err.Error()
	case errors.As(err, &st):
		return "the API server refused it: " + err.Error()
	default:
		return "patching pods/resize: " + err.Error()
	}
}
