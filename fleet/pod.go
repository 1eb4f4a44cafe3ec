package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ManifestPod is a pod template with a pod-level CPU limit (Kubernetes
// 1.34+: spec.resources.limits.cpu, one quota over all its containers) and
// the containers that run under it (regular ones and sidecars).
type ManifestPod struct {
	File     string   `json:"file"`
	Line     int      `json:"line"` // the pod-level limits.cpu's
	Workload Workload `json:"workload"`
	// LimitMilli is the pod-level CPU limit; RequestMilli the pod-level
	// CPU request (0: none written).
	LimitMilli   int64               `json:"pod_limit_millicores"`
	RequestMilli int64               `json:"pod_request_millicores,omitempty"`
	Containers   []string            `json:"containers"`
	members      []ManifestContainer // in manifest order
}

// Pods returns the pod templates of ms that have a pod-level CPU limit, in
// the order their first container comes.
func Pods(ms []ManifestContainer) []ManifestPod {
	type key struct {
		file string
		w    Workload
	}
	at := map[key]int{}
	var out []ManifestPod
	for _, mc := range ms {
		if mc.PodLimitMilli <= 0 {
			continue
		}
		k := key{mc.File, mc.Workload}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, ManifestPod{File: mc.File, Line: mc.PodLimitLine, Workload: mc.Workload, LimitMilli: mc.PodLimitMilli, RequestMilli: mc.PodRequestMilli})
		}
		out[i].Containers = append(out[i].Containers, mc.Container)
		out[i].members = append(out[i].members, mc)
	}
	return out
}

// Members returns the pod's containers as the manifest has them.
func (p ManifestPod) Members() []ManifestContainer { return p.members }

// label names the pod and its limit: "pod web (pod-level 400m)".
func (p ManifestPod) label() string {
	return fmt.Sprintf("pod %s (pod-level %s)", p.Workload.Name, cpu(p.LimitMilli))
}

// PodCheck is a pod-level limit checked against its containers' summed
// demand.
type PodCheck struct {
	ManifestPod
	Prediction    Prediction `json:"prediction"`
	Source        string     `json:"source,omitempty"`
	Skip          string     `json:"skip,omitempty"`
	MissingDemand bool       `json:"missing_demand,omitempty"`
	Violations    []string   `json:"violations,omitempty"`
}

// PodEvaluator is an Evaluator that can also predict a pod-level limit on
// the summed demand of the pod's containers. A *Skipped error leaves the
// pod unchecked; any other error ends the check.
type PodEvaluator interface {
	PredictPod(ctx context.Context, p ManifestPod) (pr Prediction, source string, err error)
}

// NoPodSeries is what a source that has no pod-level series says of a
// pod-level limit.
func NoPodSeries(source string) string {
	return "pod-level limit not checked: " + source + " has no pod-level series"
}

// CheckPods predicts every pod-level limit of ms on the pod's summed demand
// and compares it with the budget (recorded demand: the containers' CSVs
// aligned and replayed nested, each container's own limit inside the
// pod's; the agents: the pod's own series). An evaluator that is no
// PodEvaluator leaves each pod unchecked, saying so; a gate must not take that for a pass (MissingDemand), as for a
// container without demand.
func CheckPods(ctx context.Context, ms []ManifestContainer, ev Evaluator, b Budget) ([]PodCheck, error) {
	pods := Pods(ms)
	out := make([]PodCheck, 0, len(pods))
	pe, ok := ev.(PodEvaluator)
	for _, p := range pods {
		o := PodCheck{ManifestPod: p}
		if !ok {
			o.Skip, o.MissingDemand = NoPodSeries(sourceName(ev)), true
			out = append(out, o)
			continue
		}
		pr, src, err := pe.PredictPod(ctx, p)
		var sk *Skipped
		switch {
		case errors.As(err, &sk):
			o.Skip, o.MissingDemand = sk.Why, true
		case err != nil:
			return nil, fmt.Errorf("%s:%d: %s %s: %w", p.File, p.Line, p.Workload, p.label(), err)
		default:
			o.Prediction, o.Source = pr, src
			o.Violations = b.violations(pr, p.LimitMilli)
		}
		out = append(out, o)
	}
	return out, nil
}

// PredictPod implements PodEvaluator for the agents' series: the pod's
// own group, which a node's agent summarises where the pod has a
// pod-level limit (its cgroup's counts are its containers' summed), at
// p's limit; the worst replica stands for the workload, as for a
// container. A workload without pod series (no pod-level limit running
// yet, or an agent older than pod series) is left unchecked.
func (m *Measured) PredictPod(ctx context.Context, p ManifestPod) (Prediction, string, error) {
	var reps []*Container
	for _, c := range m.Pods {
		w := WorkloadOf(c)
		if w == p.Workload || (p.Workload.Kind == "CronJob" && w.Namespace == p.Workload.Namespace && w.Kind == "Job" &&
			strings.HasPrefix(w.Name, p.Workload.Name+"-") && digitsOnly(w.Name[len(p.Workload.Name)+1:])) {
			reps = append(reps, c)
		}
	}
	switch {
	case len(m.Pods) == 0:
		return Prediction{}, "", &Skipped{NoPodSeries(sourceName(m))}
	case len(reps) == 0:
		return Prediction{}, "", &Skipped{fmt.Sprintf("pod-level limit not checked: no pod-level series of %s %s in namespace %s in %s (an agent summarises a pod's own group where the running pod has a pod-level limit)",
			strings.ToLower(p.Workload.Kind), p.Workload.Name, p.Workload.Namespace, sourceName(m))}
	}
	var (
		worst     Prediction
		pod, src  string
		why       []string
		predicted bool
	)
	for _, c := range reps {
		pr, s, err := m.predictOne(ctx, c, p.LimitMilli)
		var sk *Skipped
		if errors.As(err, &sk) {
			why = append(why, "pod "+c.Pod+": "+sk.Why)
			continue
		}
		if err != nil {
			return Prediction{}, "", err
		}
		if !predicted || pr.ThrottledRatio > worst.ThrottledRatio || (pr.ThrottledRatio == worst.ThrottledRatio && pr.DelayP99Ms > worst.DelayP99Ms) {
			worst, pod, src, predicted = pr, c.Pod, s, true
		}
	}
	if !predicted {
		return Prediction{}, "", &Skipped{strings.Join(why, "; ")}
	}
	src = "pod " + pod + "'s own series, " + src
	if len(why) > 0 {
		src += fmt.Sprintf("; %d of %d replicas not predicted: %s", len(why), len(reps), strings.Join(why, "; "))
	}
	return worst, src, nil
}

// sourceName names an evaluator's source for a message.
func sourceName(ev Evaluator) string {
	if m, ok := ev.(*Measured); ok {
		if m.Agent != "" {
			return "agent " + m.Agent
		}
		return "Prometheus " + m.Prometheus
	}
	return "the demand source"
}

// PodsViolated reports whether any pod-level limit breaks the budget.
func PodsViolated(res []PodCheck) bool {
	for _, o := range res {
		if len(o.Violations) > 0 {
			return true
		}
	}
	return false
}

// MissingPodDemand returns the pod checks without demand to check on.
func MissingPodDemand(res []PodCheck) []PodCheck {
	return missing(res, func(o PodCheck) bool { return o.MissingDemand })
}

// WritePods writes, as WriteCheck does for containers, one line per
// violation of a pod-level limit (FILE:LINE: NS/KIND/NAME: pod NAME
// (pod-level LIMIT): predicted X vs budget Y), one per pod not checked,
// with verbose one per pod within budget, and a summary; nothing when
// there is no pod-level limit.
func WritePods(w io.Writer, res []PodCheck, verbose bool) error {
	if len(res) == 0 {
		return nil
	}
	var checked, bad, skipped int
	for _, o := range res {
		head := fmt.Sprintf("%s:%d: %s: %s", o.File, o.Line, o.Workload, o.label())
		switch {
		case o.Skip != "":
			skipped++
			fmt.Fprintf(w, "%s: not checked: %s\n", head, o.Skip)
		case len(o.Violations) > 0:
			checked++
			bad++
			for _, v := range o.Violations {
				fmt.Fprintf(w, "%s: %s over %s summed (%s)\n", head, v, strings.Join(o.Containers, "+"), o.Source)
			}
		default:
			checked++
			if verbose {
				fmt.Fprintf(w, "%s: ok at %s over %s summed: throttled %s, p99 added delay %.1fms (%s)\n", head,
					cpu(o.LimitMilli), strings.Join(o.Containers, "+"), pctOf(o.Prediction.ThrottledRatio), o.Prediction.DelayP99Ms, o.Source)
			}
		}
	}
	_, err := fmt.Fprintf(w, "pods: %d checked, %d over budget, %d not checked\n", checked, bad, skipped)
	return err
}

// lintPods finds what is wrong with pod-level CPU resources against the
// containers' own, without demand: a container limit above the pod's
// (the API server refuses it), container limits summing above it (allowed,
// but the pod's quota throttles them all before any reaches its own), and a
// pod limit under the containers' requests summed (refused).
func lintPods(ms []ManifestContainer) []Finding {
	var out []Finding
	for _, p := range Pods(ms) {
		add := func(format string, args ...any) {
			out = append(out, Finding{File: p.File, Line: p.Line, Name: p.Workload.String(), Msg: fmt.Sprintf(format, args...)})
		}
		var limits, requests int64
		var parts []string
		over := ""
		limited := 0
		for _, mc := range p.members {
			if mc.LimitMilli > 0 {
				limited++
				limits += mc.LimitMilli
				parts = append(parts, mc.Container+" "+cpu(mc.LimitMilli))
				if mc.LimitMilli > p.LimitMilli && over == "" {
					over = mc.Container
					add("container %s's limits.cpu %s is above the pod-level limit %s: the API server refuses it; give the container at most %s", mc.Container, cpu(mc.LimitMilli), cpu(p.LimitMilli), cpu(p.LimitMilli))
				}
			}
			// A request left out is the container's limit (the API
			// server's default).
			switch {
			case mc.RequestLine > 0:
				requests += mc.RequestMilli
			case mc.LimitMilli > 0:
				requests += mc.LimitMilli
			}
		}
		if over == "" && limited > 1 && limits > p.LimitMilli {
			add("the containers' limits.cpu sum to %s (%s), above the pod-level limit %s: the pod's quota throttles them all before any reaches its own limit; lower the containers' limits or raise the pod's (a replay of the pod's limit on their summed demand shows what it does)",
				cpu(limits), strings.Join(parts, " + "), cpu(p.LimitMilli))
		}
		if requests > p.LimitMilli {
			add("the pod-level limit %s is under the containers' requests.cpu summed, %s: the API server refuses it; give a pod-level limit of at least %s", cpu(p.LimitMilli), cpu(requests), cpu(requests))
		}
	}
	return out
}
