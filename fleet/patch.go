package fleet

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/throttlelab/throttlelab/units"
)

// Resize is one running container's in-place resize: the CPU limit it runs
// now (the precondition: a pod resized by someone else meanwhile is left
// alone) and the limit to set. ToRequestMilli is set when the request moves
// with the limit (a container whose request equals its limit keeps its
// QoS class, which a resize may not change).
type Resize struct {
	Workload       Workload `json:"workload"`
	Namespace      string   `json:"namespace"`
	Pod            string   `json:"pod"`
	Container      string   `json:"container"`
	FromLimitMilli int64    `json:"from_limit_millicores"`
	ToLimitMilli   int64    `json:"to_limit_millicores"`
	// FromRequestMilli is the request now; ToRequestMilli 0 leaves it.
	FromRequestMilli int64 `json:"from_request_millicores"`
	ToRequestMilli   int64 `json:"to_request_millicores,omitempty"`
	// Skip says why the row is not resized (planned rows: no advice, no
	// limit now, the limit is already the advised one, under the request).
	Skip string `json:"skip,omitempty"`
	// Advised and Current are the worst replica's predictions at the new
	// and the old limit, for the comment beside the patch.
	Current Prediction `json:"current"`
	Advised Prediction `json:"advised"`
}

// PlanResizes turns merged advice into one resize per running replica:
// every replica of a workload gets the workload's advised limit (the worst
// replica's, so that it covers all of them).
func PlanResizes(ms []*Merged) []*Resize {
	var out []*Resize
	for _, m := range ms {
		to := m.Worst.AdvisedLimitMilli
		for _, c := range m.Pods {
			r := &Resize{Workload: m.Workload, Namespace: c.Namespace, Pod: c.Pod, Container: c.Container,
				FromLimitMilli: c.LimitMilli, ToLimitMilli: to, FromRequestMilli: c.RequestMilli,
				Current: m.Worst.Current, Advised: m.Worst.Advised}
			switch {
			case to <= 0:
				r.Skip = "no advice: " + m.Worst.Reason
			case c.LimitMilli <= 0:
				r.Skip = "no CPU limit now: a resize does not add one; set " + cpu(to) + " in the workload's template if you want one"
			case c.LimitMilli == to:
				r.Skip = "already at the advised limit"
			case c.RequestMilli > 0 && c.RequestMilli == c.LimitMilli:
				r.ToRequestMilli = to // request = limit: keep the QoS class
			case c.RequestMilli > to:
				r.Skip = fmt.Sprintf("the advised limit %s is under the request %s: lower the request first (the API refuses a limit under the request)", cpu(to), cpu(c.RequestMilli))
			}
			out = append(out, r)
		}
	}
	return out
}

// ResizePatch is the strategic merge patch of the pod's resize subresource
// (and, with template set, the same stanza for a workload's pod template).
// A pod's own row (Container "": a pod-level limit, Kubernetes 1.36+ for
// its in-place resize) patches the pod's spec.resources.
func (r *Resize) ResizePatch() []byte {
	res := map[string]any{"limits": map[string]string{"cpu": units.FormatMilliCPU(r.ToLimitMilli)}}
	if r.ToRequestMilli > 0 {
		res["requests"] = map[string]string{"cpu": units.FormatMilliCPU(r.ToRequestMilli)}
	}
	if r.Container == "" {
		b, _ := json.Marshal(map[string]any{"spec": map[string]any{"resources": res}})
		return b
	}
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": r.Container, "resources": res}}}})
	return b
}

// templatePatch wraps a pod spec patch for a workload's template.
func templatePatch(kind string, pod []byte) string {
	var p map[string]any
	json.Unmarshal(pod, &p)
	var wrapped any = map[string]any{"spec": map[string]any{"template": p}}
	if kind == "CronJob" {
		wrapped = map[string]any{"spec": map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{"template": p}}}}
	}
	b, _ := json.Marshal(wrapped)
	return string(b)
}

// WritePatches writes the resizes as a shell script of kubectl commands:
// per running pod the in-place resize (the pods/resize subresource, GA in
// Kubernetes 1.35: no restart), and per workload, commented out, the
// template patch that keeps the limit for pods made later (applying it
// rolls the pods out again; better, change the manifest in your repository).
func WritePatches(w io.Writer, rs []*Resize) error {
	fmt.Fprintln(w, "# throttlelab advise: in-place resizes (kubectl 1.32+, Kubernetes 1.35+: the resize subresource)")
	var last Workload
	lastC := ""
	for _, r := range rs {
		if r.Workload != last || r.Container != lastC {
			last, lastC = r.Workload, r.Container
			if r.ToLimitMilli <= 0 {
				fmt.Fprintf(w, "\n# %s container %s: no advice\n", r.Workload, r.Container)
			} else {
				fmt.Fprintf(w, "\n# %s container %s: limit %s -> %s (throttled %s -> %s, p99 added delay %s -> %s)\n", r.Workload, r.Container,
					cpu(r.FromLimitMilli), cpu(r.ToLimitMilli), pct(r.Current), pct(r.Advised), delayMs(r.Current), delayMs(r.Advised))
				if r.Skip == "" && r.Workload.Kind != "Pod" && r.Workload.Kind != "Job" && r.Workload.Kind != "ReplicaSet" {
					fmt.Fprintf(w, "# for pods made later (rolls the pods out): kubectl -n %s patch %s %s --patch %s\n",
						r.Namespace, strings.ToLower(r.Workload.Kind), r.Workload.Name, shellQuote(templatePatch(r.Workload.Kind, r.ResizePatch())))
				}
			}
		}
		if r.Skip != "" {
			fmt.Fprintf(w, "# pod %s: skipped: %s\n", r.Pod, r.Skip)
			continue
		}
		if r.ToRequestMilli > 0 {
			fmt.Fprintf(w, "# pod %s: request %s = limit: the request moves with it (a resize keeps the QoS class)\n", r.Pod, cpu(r.FromRequestMilli))
		}
		fmt.Fprintf(w, "kubectl -n %s patch pod %s --subresource resize --patch %s\n", r.Namespace, r.Pod, shellQuote(string(r.ResizePatch())))
	}
	return nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// templatePatchLine is the kubectl command that patches a workload's pod
// template with pod (a pod spec patch).
func templatePatchLine(ns, kind, name string, pod []byte) string {
	return fmt.Sprintf("kubectl -n %s patch %s %s --patch %s\n", ns, strings.ToLower(kind), name, shellQuote(templatePatch(kind, pod)))
}
