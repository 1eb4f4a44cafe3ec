package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/throttlelab/throttlelab/schemas"
	"github.com/throttlelab/throttlelab/units"
)

// kube are the labels of every per-container metric.
var kube = []string{"namespace", "pod", "container"}

func kdesc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string{}, kube...), extra...), nil)
}

// The agent's metrics (docs/fleet.md lists them with their meaning).
var (
	descInfo = prometheus.NewDesc("throttlelab_container_info", "A container the agent summarises: its owner, cgroup and node.",
		[]string{"namespace", "pod", "container", "owner_kind", "owner_name", "cgroup", "node"}, nil)
	descLimit    = kdesc("throttlelab_container_cpu_limit_cores", "The CPU limit the container has: its cgroup's CFS quota per period, in cores; absent without a limit.")
	descRequest  = kdesc("throttlelab_container_cpu_request_cores", "The CPU request the container has: its cgroup's weight (or shares) read back to a request, in cores.")
	descBurst    = kdesc("throttlelab_container_cpu_burst_cores", "The container's CFS burst per period, in cores; absent without a limit.")
	descAdvLimit = kdesc("throttlelab_advised_cpu_limit_cores", "The smallest limit (no burst) that meets the target over the window.", "target")
	descAdvBurst = kdesc("throttlelab_advised_cpu_burst_cores", "With a burst: the smallest limit that meets the target with a burst equal to itself (set limit and burst both to this); absent when a burst buys nothing.", "target")
	descPredThr  = kdesc("throttlelab_predicted_throttled_ratio", "Throttled share of periods the quota model predicts over the window at a limit (at=current|advised|krr|vpa).", "at")
	descPredP99  = kdesc("throttlelab_predicted_delay_p99_seconds", "p99 of the delay the quota model predicts the limit adds to the work over the window (at=current|advised|krr|vpa).", "at")
	descKrr      = kdesc("throttlelab_krr_cpu_cores", "krr's simple strategy from the same data: p95 of the use over 1.25-minute windows (krr sets it as the request and no limit).")
	descVPA      = kdesc("throttlelab_vpa_cpu_target_cores", "The VPA recommender's target from the same data: p90 of 1-minute use + 15%.")
	descCPUs     = kdesc("throttlelab_container_cpus_used", "The most CPUs the container ran on within one minute of its window (each with 2% of its CPU time or more), from the kernel's per-CPU counters read while it was sampled every 10 ms; absent where they were not.")
	descWindow   = kdesc("throttlelab_demand_window_seconds", "How much demand the container's summary holds, in seconds (up to the window).")
	descStartup  = kdesc("throttlelab_startup_throttled_ratio", "For a container the agent saw start: the throttled share of periods its start-up (kept apart from the advice) would have at a limit (at=current|advised); absent otherwise.", "at")
	descStall    = kdesc("throttlelab_container_cpu_stall_seconds_total", "Time some of the container's runnable tasks stalled (cpu.pressure \"some\"), by cause: cause=\"quota\" its limit held them back (throttled), cause=\"contention\" they waited for a CPU while not throttled; since the agent began watching it, absent where the split is unknown (no cpu.pressure).", "cause")
	// The pod spec's, beside the cgroup's above (with the owner lookup):
	// after an in-place resize the spec changes at once, the cgroup once
	// the kubelet has applied it.
	descSpecLimit   = kdesc("throttlelab_container_spec_cpu_limit_cores", "The CPU limit the container's pod spec asks for, in cores (from the pod list, with the owner lookup on); absent without a limit. Differs from throttlelab_container_cpu_limit_cores while an in-place resize is not applied.")
	descSpecRequest = kdesc("throttlelab_container_spec_cpu_request_cores", "The CPU request the container's pod spec asks for (the limit when it sets none), in cores (from the pod list, with the owner lookup on); absent without one.")
	descPredErr     = kdesc("throttlelab_container_prediction_error_ratio", "The advice's self-audit: the throttled share of periods the quota model predicts at the container's own limit over the window, less the share the kernel counted (nr_throttled over the replay's periods); every interval of the advice is widened by its size. Absent without a limit.")
	// The runtime inside (read at discovery and on exec): one info series
	// and up to three parallelism series per container, as
	// kube-state-metrics' *_info series carry what is not a number.
	descRuntimeInfo = kdesc("throttlelab_runtime_info", "The runtime inside the container (runtime=go|jvm|node|nginx|envoy|python|dotnet, its version where readable), the setting that decides its parallelism as the runtime spells it and whether the container sets it (set=true|false); absent where no runtime is known. Read at discovery and on exec.", "runtime", "version", "setting", "set")
	descRuntimePar  = kdesc("throttlelab_runtime_parallelism", "Threads the container's runtime runs at once: value=found under its limit now (its setting or its default rule), value=advised_limit under the advised limit by the same, value=recommended the one to set with the advised limit (its cores rounded up, within the CPUs).", "value")
	descStat        = kdesc("throttlelab_demand_stationary", "1 when the window's blocks agree (advise's judgement), 0 when the demand changed within the window: the advice then rests on its worst block.")
)

// The agent's metrics of itself, one series each per agent (two look-up
// counters), beside client_golang's process_* and go_* of its process.
var (
	descAgentInfo = prometheus.NewDesc("throttlelab_agent_info", "The agent and its node: join its process_* series on job and instance to this for the node label.", []string{"node"}, nil)
	descAgentN    = prometheus.NewDesc("throttlelab_agent_containers", "Containers the agent summarises.", nil, nil)
	descSamples   = prometheus.NewDesc("throttlelab_agent_samples_total", "Samples the agent took (every 10 ms by default).", nil, nil)
	descMissed    = prometheus.NewDesc("throttlelab_agent_samples_missed_total", "Sampling instants skipped because a sample came more than half an interval late (the agent was not scheduled in time or fell behind): the time between two samples is then replayed as one step, a burst in it as its mean.", nil, nil)
	descWatching  = prometheus.NewDesc("throttlelab_agent_new_containers_watched", "1 when every cgroup directory is watched (inotify), so a new container is found as its cgroup is made; 0 when new ones wait for the next refresh and the agent's log says why.", nil, nil)
	descReadErrs  = prometheus.NewDesc("throttlelab_agent_read_errors_total", "Reads of a cgroup's counters that failed while the group was still there (EBUSY, a short read, a read racing a move; or lasting: permission): the container's summary is kept, the interval read again at its next sample.", nil, nil)
	descUnread    = prometheus.NewDesc("throttlelab_agent_unreadable_containers", fmt.Sprintf("Containers whose last %d reports all had a read error: their summaries are kept, no longer growing, until their cgroups go.", UnreadableAfter), nil, nil)
	descLookups   = prometheus.NewDesc("throttlelab_agent_owner_lookups_total", "Look-ups of the node's pods (owners and names) that worked (result=ok) and failed (result=failed; the agent's log says why).", []string{"result"}, nil)
	descCkptErrs  = prometheus.NewDesc("throttlelab_agent_checkpoint_errors_total", "Checkpoints of the summaries not used at start-up (reason=corrupt: truncated or damaged; refused: another format version or configuration; unreadable) or not written (reason=write: a full disk, a directory the agent cannot write): the window started again, or the previous checkpoint stays; the agent's log says why.", []string{"reason"}, nil)
)

type selfCollector struct{ a *Agent }

func (c selfCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descAgentInfo, descAgentN, descSamples, descMissed, descReadErrs, descUnread, descWatching, descLookups, descCkptErrs} {
		ch <- d
	}
}

func (c selfCollector) Collect(ch chan<- prometheus.Metric) {
	a := c.a
	a.mu.Lock()
	n := len(a.containers)
	a.mu.Unlock()
	taken, missed := a.w.SampleCounts()
	watching := 0.0
	if a.watching.Load() {
		watching = 1
	}
	ch <- prometheus.MustNewConstMetric(descAgentInfo, prometheus.GaugeValue, 1, a.cfg.Node)
	ch <- prometheus.MustNewConstMetric(descAgentN, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(descSamples, prometheus.CounterValue, float64(taken))
	ch <- prometheus.MustNewConstMetric(descMissed, prometheus.CounterValue, float64(missed))
	ch <- prometheus.MustNewConstMetric(descReadErrs, prometheus.CounterValue, float64(a.w.ReadErrors()))
	ch <- prometheus.MustNewConstMetric(descUnread, prometheus.GaugeValue, float64(a.unreadable.Load()))
	ch <- prometheus.MustNewConstMetric(descWatching, prometheus.GaugeValue, watching)
	for reason, n := range a.CheckpointErrors() {
		ch <- prometheus.MustNewConstMetric(descCkptErrs, prometheus.CounterValue, float64(n), reason)
	}
	if a.cfg.Owners != nil {
		ch <- prometheus.MustNewConstMetric(descLookups, prometheus.CounterValue, float64(a.lookupsOK.Load()), "ok")
		ch <- prometheus.MustNewConstMetric(descLookups, prometheus.CounterValue, float64(a.lookupsFailed.Load()), "failed")
	}
}

// atOrder is the order of the at label's values.
var atOrder = []string{"current", "advised", "krr", "vpa"}

type collector struct{ a *Agent }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInfo, descLimit, descRequest, descSpecLimit, descSpecRequest, descBurst, descAdvLimit, descAdvBurst, descPredThr, descPredP99, descKrr, descVPA, descWindow, descCPUs, descStat, descStartup, descStall, descPredErr, descRuntimeInfo, descRuntimePar} {
		ch <- d
	}
	for _, d := range startupDescs {
		ch <- d
	}
}

// stallTotals returns each container's stall split so far, by cgroup path
// (those whose split is known).
func (a *Agent) stallTotals() map[string][2]float64 {
	a.mu.Lock()
	cs := make([]*container, 0, len(a.containers))
	for _, c := range a.containers {
		cs = append(cs, c)
	}
	a.mu.Unlock()
	out := make(map[string][2]float64, len(cs))
	for _, c := range cs {
		c.mu.Lock()
		if t := c.last.Totals; t.StallQuotaSeconds != nil {
			out[c.path] = [2]float64{*t.StallQuotaSeconds, *t.StallContentionSeconds}
		}
		c.mu.Unlock()
	}
	return out
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	stall := c.a.stallTotals()
	for _, v := range c.a.views() {
		lv := []string{v.Namespace, v.Pod, v.Container}
		g := func(d *prometheus.Desc, val float64, extra ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, val, append(append([]string{}, lv...), extra...)...)
		}
		ch <- prometheus.MustNewConstMetric(descInfo, prometheus.GaugeValue, 1, v.Namespace, v.Pod, v.Container, v.OwnerKind, v.OwnerName, v.Cgroup, c.a.cfg.Node)
		if v.hasLimit {
			g(descLimit, float64(v.LimitMilli)/1000)
			g(descBurst, float64(v.BurstMilli)/1000)
		}
		if v.hasRequest {
			g(descRequest, float64(v.RequestMilli)/1000)
		}
		if s, ok := c.a.specOf(v.Namespace, v.Pod, v.Container); ok {
			if s.HasLimit {
				g(descSpecLimit, float64(s.LimitMilli)/1000)
			}
			if s.HasRequest {
				g(descSpecRequest, float64(s.RequestMilli)/1000)
			}
		}
		g(descWindow, v.WindowSeconds)
		if v.CPUsUsed > 0 {
			g(descCPUs, float64(v.CPUsUsed))
		}
		if s, ok := stall[v.Cgroup]; ok {
			ch <- prometheus.MustNewConstMetric(descStall, prometheus.CounterValue, s[0], append(append([]string{}, lv...), "quota")...)
			ch <- prometheus.MustNewConstMetric(descStall, prometheus.CounterValue, s[1], append(append([]string{}, lv...), "contention")...)
		}
		startupMetrics(v, g)
		runtimeMetrics(v, g)
		if !v.advised {
			continue
		}
		stationary := 0.0
		if v.stationary {
			stationary = 1
		}
		g(descStat, stationary)
		if st := v.Startup; st != nil {
			if st.AtCurrent != nil {
				g(descStartup, st.AtCurrent.ThrottledRatio, "current")
			}
			if st.AtAdvised != nil {
				g(descStartup, st.AtAdvised.ThrottledRatio, "advised")
			}
		}
		for i, r := range v.perTarget {
			name := c.a.cfg.Targets[i].Name
			g(descAdvLimit, float64(r.LimitMilli)/1000, name)
			if r.WithBurst != nil {
				g(descAdvBurst, float64(r.WithBurst.BurstMilli)/1000, name)
			}
		}
		for _, at := range atOrder {
			if e := v.at[at]; e != nil {
				g(descPredThr, e.ThrottledRatio, at)
				g(descPredP99, e.DelayP99Ms/1000, at)
			}
		}
		if v.audit != nil {
			g(descPredErr, v.audit.Error)
		}
		if v.KrrMilli > 0 {
			g(descKrr, float64(v.KrrMilli)/1000)
		}
		if v.VPAMilli > 0 {
			g(descVPA, float64(v.VPAMilli)/1000)
		}
	}
}

// AdviceDoc is the /advice endpoint's answer.
type AdviceDoc struct {
	APIVersion string  `json:"apiVersion"`
	Kind       string  `json:"kind"`
	Node       string  `json:"node"`
	Containers []*View `json:"containers"`
}

// Handler serves /metrics (watch's metrics of the summarised containers, the
// agent's per container, and its own with its process's), /advice and
// /evaluate.
func (a *Agent) Handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(a.collector, collector{a}, selfCollector{a}, hotCollector{a},
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/advice", a.serveAdvice)
	mux.HandleFunc("/evaluate", a.serveEvaluate)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("throttlelab agent: /metrics, /advice, /evaluate?namespace=&pod=&container=&limit=500m&burst=0\n"))
	})
	return mux
}

type errorDoc struct {
	Error string `json:"error"`
}

func (a *Agent) serveEvaluate(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limitS := q.Get("limit")
	if limitS == "" {
		writeJSON(w, http.StatusBadRequest, errorDoc{"limit: give a CPU quantity (limit=500m)"})
		return
	}
	limit, _, err := units.ParseMilliCPU(limitS)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorDoc{"limit: " + err.Error()})
		return
	}
	var burst int64
	if b := q.Get("burst"); b != "" && b != "0" {
		if burst, _, err = units.ParseMilliCPU(b); err != nil {
			writeJSON(w, http.StatusBadRequest, errorDoc{"burst: " + err.Error()})
			return
		}
	}
	e, err := a.Evaluate(q.Get("namespace"), q.Get("pod"), q.Get("container"), limit, burst)
	switch {
	case errors.Is(err, ErrNoContainer):
		writeJSON(w, http.StatusNotFound, errorDoc{err.Error()})
	case errors.Is(err, ErrNoDemand):
		writeJSON(w, http.StatusServiceUnavailable, errorDoc{err.Error() + ": the container was seen for less than a chunk; ask again later"})
	case err != nil:
		writeJSON(w, http.StatusBadRequest, errorDoc{strings.TrimSpace(err.Error())})
	default:
		writeJSON(w, http.StatusOK, schemas.Doc(schemas.KindEvaluation, e))
	}
}

// serveAdvice writes an AdviceDoc one container at a time, each one's
// entry as the last fold left it (Agent.eachAdvice).
func (a *Agent) serveAdvice(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	node, _ := json.Marshal(a.cfg.Node)
	fmt.Fprintf(w, "{\n  \"apiVersion\": %q,\n  \"kind\": %q,\n  \"node\": %s,\n  \"containers\": [", schemas.APIVersion, schemas.KindAgentAdvice, node)
	sep := "\n    "
	err := a.eachAdvice(func(b []byte) error {
		io.WriteString(w, sep)
		_, err := w.Write(b)
		sep = ",\n    "
		return err
	})
	if err != nil {
		a.cfg.Logger.Warn("/advice", "err", err) // the client sees JSON cut short
		return
	}
	if sep == "\n    " {
		io.WriteString(w, "]\n}\n")
		return
	}
	io.WriteString(w, "\n  ]\n}\n")
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
