package advise

import (
	"fmt"
	"io"
	"strings"
)

// WritePodText writes the pod's answer in a few lines (at most 15 for
// pods of up to 4 containers): which setting is cheapest and by how much,
// the samples and target, each setting with each container's delay and
// its wait for the pod's quota, and the warnings.
func WritePodText(w io.Writer, a *PodAdvice) error {
	s := a.Sampled
	lines := []string{PodAnswer(a), fmt.Sprintf("pod %s: %.0fs sampled, %.2f cores summed on average, %.2f at most in 10 ms; target: %s in every quota",
		strings.Join(s.Containers, "+"), s.DurationSeconds, s.MeanCores, s.MaxCores10ms, targetText(a.Target))}
	for _, o := range a.Options {
		lines = append(lines, "  "+podOptionLine(o))
	}
	lines = append(lines, "a throttled pod quota stops every container in it: each delay counts the container's own wait, whichever quota held it")
	if o := a.Option(a.Cheapest); o != nil && o.PodLimitMilli > 0 {
		lines = append(lines, "set: spec.resources.limits.cpu on the pod (Kubernetes 1.34+, feature gate PodLevelResources); -o patch writes it")
	}
	for _, wn := range a.Warnings {
		lines = append(lines, "warning: "+wn)
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

// PodAnswer is the advice's answer in one line: the cheapest setting and
// what it saves against the other kind.
func PodAnswer(a *PodAdvice) string {
	o := a.Option(a.Cheapest)
	if o == nil {
		return "answer: no setting tried meets the target (the most generous of each kind below): sample longer, or relax the target"
	}
	line := "answer: " + settingText(*o)
	if a.Against != "" {
		other := a.Option(a.Against)
		if a.SavedMilli > 0 {
			line += fmt.Sprintf(", %s less than %s (%s)", podMilliText(a.SavedMilli), settingName(other.Setting), podMilliText(other.CostMilli))
		} else {
			line += fmt.Sprintf(", the same as %s (%s)", settingName(other.Setting), podMilliText(other.CostMilli))
		}
	}
	return line
}

// settingName names a setting in a sentence.
func settingName(s string) string {
	switch s {
	case PodPerContainer:
		return "per-container limits"
	case PodLevel:
		return "one pod-level limit"
	}
	return "container limits inside a pod limit"
}

// settingText is a setting and its limits: "one pod-level limit of 700m".
func settingText(o PodOption) string {
	var cs []string
	for _, c := range o.Containers {
		if c.LimitMilli > 0 {
			cs = append(cs, c.Name+" "+podMilliText(c.LimitMilli))
		}
	}
	switch o.Setting {
	case PodPerContainer:
		return fmt.Sprintf("per-container limits %s = %s", strings.Join(cs, " + "), podMilliText(o.CostMilli))
	case PodLevel:
		return "one pod-level limit of " + podMilliText(o.PodLimitMilli)
	}
	return fmt.Sprintf("a pod-level limit of %s around %s", podMilliText(o.PodLimitMilli), strings.Join(cs, " + "))
}

// podOptionLine is one setting: its limits, the pod quota's throttling,
// each container's own throttling, p99 delay and wait for the pod.
func podOptionLine(o PodOption) string {
	head := settingText(o)
	if !o.Met {
		head += " (misses the target)"
	}
	var parts []string
	if o.PodLimitMilli > 0 {
		parts = append(parts, "pod throttled "+podPct(o.PodThrottledRatio))
	}
	for _, c := range o.Containers {
		var why []string
		if c.LimitMilli > 0 {
			why = append(why, "own quota throttled "+podPct(c.ThrottledRatio))
		}
		if o.PodLimitMilli > 0 {
			why = append(why, fmt.Sprintf("%.1fs waiting for the pod's", c.PodThrottledSeconds))
		}
		parts = append(parts, fmt.Sprintf("%s p99 added delay %.1fms (%s)", c.Name, c.DelayP99Ms, strings.Join(why, ", ")))
	}
	return head + ": " + strings.Join(parts, "; ")
}

// podMilliText writes millicores as millicores, 1000m included: costs compare
// at a glance.
func podMilliText(m int64) string { return fmt.Sprintf("%dm", m) }

func podPct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }
