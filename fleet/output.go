package fleet

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/throttlelab/throttlelab/schemas"
	"github.com/throttlelab/throttlelab/units"
)

func cpu(m int64) string {
	if m <= 0 {
		return "-"
	}
	return units.FormatMilliCPU(m)
}

func pct(p Prediction) string {
	if !p.Known {
		return "-"
	}
	return strconv.FormatFloat(p.ThrottledRatio*100, 'f', 1, 64) + "%"
}

func delayMs(p Prediction) string {
	if !p.Known {
		return "-"
	}
	return strconv.FormatFloat(p.DelayP99Ms, 'f', 1, 64) + "ms"
}

// withBurst writes the advice with a burst: a limit and a burst both of m.
func withBurst(m int64) string {
	if m <= 0 {
		return "-"
	}
	return cpu(m) + "+" + cpu(m)
}

// spread writes the replicas' advised limits as "min..max" when they differ.
func spread(m *Merged) string {
	if m.Replicas == 1 || m.AdvisedMinMilli == m.AdvisedMaxMilli {
		return ""
	}
	return cpu(m.AdvisedMinMilli) + ".." + cpu(m.AdvisedMaxMilli)
}

func note(m *Merged) string {
	w := m.Worst
	var n []string
	if w.Reason != "" {
		n = append(n, w.Reason)
	}
	if m.LimitsDiffer {
		n = append(n, "replicas run different limits (worst replica's shown)")
	}
	if w.NotStationary {
		n = append(n, "demand changed within the window: advised for its worst block")
	}
	if s := w.StartupAdvised; s != nil && *s > 0 {
		n = append(n, fmt.Sprintf("start-up (kept apart) %.1f%% throttled at the advised limit", 100**s))
	}
	if s := spread(m); s != "" {
		n = append(n, "advised over replicas "+s)
	}
	return strings.Join(n, "; ")
}

// runtimeCell writes c's runtime for the table: "go 8", its parallelism
// under the limit now, then "->GOMAXPROCS=2" where the value to set with
// the advised limit differs from what the runtime would use under it;
// "-" when the agent knows none.
func runtimeCell(c *Container) string {
	r := c.Runtime
	if r == nil {
		return "-"
	}
	s := fmt.Sprintf("%s %d", r.Runtime, r.Found)
	if r.RecommendedSetting != "" && r.Recommended != r.AtAdvised {
		s += "->" + r.RecommendedSetting
	}
	return s
}

// WriteTable writes one line per workload container: the worst replica's
// settings and advice (see Merged), throttled share and p99 added delay
// now and at the advised limit (WITH BURST is the smaller limit that meets
// the target with a burst as large as itself: 650m+650m), and what krr's and the VPA's rules set with
// what each would cause; RUNTIME is the runtime inside, its parallelism
// now and the setting to change with the advised limit (runtimeCell).
func WriteTable(w io.Writer, ms []*Merged) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tWORKLOAD\tCONTAINER\tPODS\tREQUEST\tLIMIT\tTHR NOW\tP99 NOW\tADVISED\tWITH BURST\tTHR AFTER\tP99 AFTER\tKRR\tTHR@KRR\tVPA\tTHR@VPA\tRUNTIME\tNOTE")
	for _, m := range ms {
		c := m.Worst
		fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			m.Workload.Namespace, strings.ToLower(m.Workload.Kind), m.Workload.Name, m.Container, m.Replicas,
			cpu(c.RequestMilli), cpu(c.LimitMilli), pct(c.Current), delayMs(c.Current),
			cpu(c.AdvisedLimitMilli), withBurst(c.AdvisedBurstMilli), pct(c.Advised), delayMs(c.Advised),
			cpu(c.KrrMilli), pct(c.Krr), cpu(c.VPAMilli), pct(c.VPA), runtimeCell(c), note(m))
	}
	return tw.Flush()
}

// WriteJSON writes the merged workloads as one JSON document.
func WriteJSON(w io.Writer, ms []*Merged) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(schemas.Doc(schemas.KindWorkloadAdvice, struct {
		Workloads []*Merged `json:"workloads"`
	}{ms}))
}

// CSVHeader is the header WriteCSV writes.
var CSVHeader = []string{"namespace", "workload_kind", "workload", "container", "replicas", "worst_pod", "node",
	"request_millicores", "limit_millicores", "burst_millicores", "throttled_now", "delay_p99_ms_now",
	"advised_limit_millicores", "advised_min_millicores", "advised_max_millicores", "advised_burst_millicores", "throttled_advised", "delay_p99_ms_advised",
	"krr_millicores", "throttled_krr", "delay_p99_ms_krr", "vpa_millicores", "vpa_limit_millicores", "throttled_vpa", "delay_p99_ms_vpa", "window_seconds",
	"runtime", "parallelism_found", "parallelism_recommended", "recommended_setting", "reason"}

// WriteCSV writes one row per workload container (the worst replica's
// figures), numbers unformatted; an unknown prediction is an empty cell.
func WriteCSV(w io.Writer, ms []*Merged) error {
	cw := csv.NewWriter(w)
	cw.Write(CSVHeader)
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	thr := func(p Prediction) string {
		if !p.Known {
			return ""
		}
		return f(p.ThrottledRatio)
	}
	del := func(p Prediction) string {
		if !p.Known {
			return ""
		}
		return f(p.DelayP99Ms)
	}
	for _, m := range ms {
		c := m.Worst
		var rt [4]string
		if r := c.Runtime; r != nil {
			rt = [4]string{r.Runtime, strconv.Itoa(r.Found), "", r.RecommendedSetting}
			if r.Recommended > 0 {
				rt[2] = strconv.Itoa(r.Recommended)
			}
		}
		cw.Write([]string{m.Workload.Namespace, m.Workload.Kind, m.Workload.Name, m.Container, strconv.Itoa(m.Replicas), c.Pod, c.Node,
			i(c.RequestMilli), i(c.LimitMilli), i(c.BurstMilli), thr(c.Current), del(c.Current),
			i(c.AdvisedLimitMilli), i(m.AdvisedMinMilli), i(m.AdvisedMaxMilli), i(c.AdvisedBurstMilli), thr(c.Advised), del(c.Advised),
			i(c.KrrMilli), thr(c.Krr), del(c.Krr), i(c.VPAMilli), i(c.VPALimitMilli), thr(c.VPA), del(c.VPA), f(c.WindowSeconds),
			rt[0], rt[1], rt[2], rt[3], note(m)})
	}
	cw.Flush()
	return cw.Error()
}

// Formats are the outputs Write knows.
var Formats = []string{"table", "json", "csv", "patch"}

// Write writes ms in format (one of Formats): the table, JSON, CSV, or
// the in-place resize patches of PlanResizes.
func Write(w io.Writer, format string, ms []*Merged) error {
	switch format {
	case "json":
		return WriteJSON(w, ms)
	case "csv":
		return WriteCSV(w, ms)
	case "patch":
		return WritePatches(w, PlanResizes(ms))
	case "table":
		return WriteTable(w, ms)
	}
	return fmt.Errorf("output %q: give one of %s", format, strings.Join(Formats, ", "))
}
