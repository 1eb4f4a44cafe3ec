package workload

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/fleet"
	"github.com/throttlelab/throttlelab/units"
)

// WriteAnswer writes the advice for one workload's container: the worst
// replica's (fleet.Group's choice) full advice in advise's one-answer text,
// after a line naming the workload, the replica and its node.
func WriteAnswer(w io.Writer, m *fleet.Merged, views map[string]*fleet.AgentContainer) error {
	c := m.Worst
	fmt.Fprintf(w, "%s, container %s: %d replica(s); the one that needs most is %s on node %s", m.Workload, m.Container, m.Replicas, c.Pod, c.Node)
	if m.Replicas > 1 && m.AdvisedMinMilli != m.AdvisedMaxMilli {
		fmt.Fprintf(w, " (the replicas are advised %s to %s)", units.FormatMilliCPU(m.AdvisedMinMilli), units.FormatMilliCPU(m.AdvisedMaxMilli))
	}
	fmt.Fprintf(w, "; the agent's window: %s\n\n", secondsDuration(c.WindowSeconds).String())
	v := views[c.Namespace+"/"+c.Pod+"/"+c.Container]
	if v == nil || v.Advice == nil {
		why := c.Reason
		if v != nil && v.Why != "" {
			why = v.Why
		}
		_, err := fmt.Fprintf(w, "no advice yet: %s\n", why)
		return err
	}
	return advise.WriteText(w, v.Advice)
}

// Sort orders of the cluster-wide top.
const (
	// ByThrottled: the predicted throttled share at the current limit,
	// highest first.
	ByThrottled = "throttled"
	// ByDelay: the predicted p99 added delay at the current limit,
	// highest first.
	ByDelay = "delay"
)

// SortTop orders the containers for the cluster-wide top: by ByThrottled
// or ByDelay, highest first, ties by namespace, pod and container.
func SortTop(rows []*fleet.Container, by string) error {
	key := func(c *fleet.Container) float64 { return c.Current.ThrottledRatio }
	switch by {
	case ByThrottled:
	case ByDelay:
		key = func(c *fleet.Container) float64 { return c.Current.DelayP99Ms }
	default:
		return fmt.Errorf("sort %q: %w: give %s or %s", by, ErrBadRef, ByThrottled, ByDelay)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if ka, kb := key(a), key(b); ka != kb {
			return ka > kb
		}
		return a.Namespace+"/"+a.Pod+"/"+a.Container < b.Namespace+"/"+b.Pod+"/"+b.Container
	})
	return nil
}

// TopRow is one container of the cluster-wide top's JSON.
type TopRow struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Container string `json:"container"`
	Node      string `json:"node"`
	// LimitMillicores is the current limit (0: none).
	LimitMillicores int64 `json:"limit_millicores"`
	// ThrottledPeriodsRatio and DelayP99Ms: the quota model's prediction
	// at the current limit over the agent's window (known: false without
	// a limit or samples).
	Known                  bool    `json:"known"`
	ThrottledPeriodsRatio  float64 `json:"throttled_periods_ratio"`
	DelayP99Ms             float64 `json:"delay_p99_ms"`
	AdvisedLimitMillicores int64   `json:"advised_limit_millicores"`
	WindowSeconds          float64 `json:"window_seconds"`
	Reason                 string  `json:"reason,omitempty"`
}

// TopDoc is the cluster-wide top's JSON document.
type TopDoc struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Containers []TopRow `json:"containers"`
}

// WriteTopJSON writes the rows, in their order, as a TopDoc.
func WriteTopJSON(w io.Writer, rows []*fleet.Container) error {
	doc := TopDoc{APIVersion: "throttlelab.dev/v1", Kind: "ClusterTop", Containers: []TopRow{}}
	for _, c := range rows {
		doc.Containers = append(doc.Containers, TopRow{Namespace: c.Namespace, Pod: c.Pod, Container: c.Container, Node: c.Node,
			LimitMillicores: c.LimitMilli, Known: c.Current.Known, ThrottledPeriodsRatio: c.Current.ThrottledRatio, DelayP99Ms: c.Current.DelayP99Ms,
			AdvisedLimitMillicores: c.AdvisedLimitMilli, WindowSeconds: c.WindowSeconds, Reason: c.Reason})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// WriteTopTable writes the rows, in their order, as a table.
func WriteTopTable(w io.Writer, rows []*fleet.Container) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tPOD\tCONTAINER\tNODE\tLIMIT\tTHROTTLED\tDELAY P99\tADVISED\tWINDOW")
	for _, c := range rows {
		thr, delay := "-", "-"
		if c.Current.Known {
			thr = fmt.Sprintf("%.1f%%", c.Current.ThrottledRatio*100)
			delay = fmt.Sprintf("%.1fms", c.Current.DelayP99Ms)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Namespace, c.Pod, c.Container, c.Node, milli(c.LimitMilli), thr, delay,
			milli(c.AdvisedLimitMilli), secondsDuration(c.WindowSeconds).String())
	}
	return tw.Flush()
}

func milli(m int64) string {
	if m <= 0 {
		return "-"
	}
	return units.FormatMilliCPU(m)
}

// secondsDuration is a window in seconds as a duration, to the second.
func secondsDuration(s float64) time.Duration {
	return time.Duration(s) * time.Second
}
