package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/advise"
)

// Budget is what a proposed limit may cause: a throttled share of periods
// and, if MaxDelayP99 is set, a p99 added delay.
type Budget struct {
	MaxThrottled float64
	MaxDelayP99  time.Duration
}

// ContainerCheck is one manifest container checked against its measured demand.
type ContainerCheck struct {
	ManifestContainer
	// Prediction is at the proposed limit, for the worst measured replica
	// (Pod).
	Prediction Prediction `json:"prediction"`
	Pod        string     `json:"pod,omitempty"`
	// Source says where the prediction comes from: an exported prediction
	// (the proposed limit is one the agent already evaluates), an agent's
	// /evaluate, or a recorded demand file.
	Source string `json:"source,omitempty"`
	// Skip says why the container was not checked.
	Skip string `json:"skip,omitempty"`
	// MissingDemand says the container has a limit and the source has no
	// measured demand for it (Skip says where it looked): a gate must not
	// take that for a pass.
	MissingDemand bool `json:"missing_demand,omitempty"`
	// Violations are the budget lines it breaks ("throttled 12.0% vs
	// budget 5.0%").
	Violations []string `json:"violations,omitempty"`
}

// Skipped is an Evaluator's answer for a container it has no demand for:
// the check goes on and says why, per row.
type Skipped struct{ Why string }

func (s *Skipped) Error() string { return s.Why }

// Evaluator predicts what a proposed limit does to a manifest container:
// the worst of its measured replicas, which replica, and from what source.
// A *Skipped error leaves the container unchecked; any other error ends
// the check.
type Evaluator interface {
	Predict(ctx context.Context, mc ManifestContainer) (p Prediction, pod, source string, err error)
}

// Check predicts every container's proposed limit and compares it with the
// budget. A container without a CPU limit is skipped (nothing throttles).
func Check(ctx context.Context, ms []ManifestContainer, ev Evaluator, b Budget) ([]ContainerCheck, error) {
	out := make([]ContainerCheck, 0, len(ms))
	for _, mc := range ms {
		o := ContainerCheck{ManifestContainer: mc}
		if mc.LimitMilli <= 0 {
			o.Skip = "no CPU limit: nothing to check"
			if mc.PodLimitMilli > 0 {
				o.Skip = "no container CPU limit: the pod-level limit " + cpu(mc.PodLimitMilli) + " is checked on the pod's summed demand"
			}
			out = append(out, o)
			continue
		}
		p, pod, src, err := ev.Predict(ctx, mc)
		var sk *Skipped
		switch {
		case errors.As(err, &sk):
			o.Skip, o.MissingDemand = sk.Why, true
		case err != nil:
			return nil, fmt.Errorf("%s:%d: %s: %w", mc.File, mc.Line, mc.name(), err)
		default:
			o.Prediction, o.Pod, o.Source = p, pod, src
			o.Violations = b.violations(p, mc.LimitMilli)
		}
		out = append(out, o)
	}
	return out, nil
}

// violations are the budget lines p breaks at limit: advise's Target.Meets
// judges each bound, the one rule advise and the agent use.
func (b Budget) violations(p Prediction, limit int64) []string {
	var out []string
	e := advise.Evaluation{ThrottledRatio: p.ThrottledRatio, DelayP99Ms: p.DelayP99Ms}
	if !(advise.Target{MaxThrottled: b.MaxThrottled}).Meets(e) {
		out = append(out, fmt.Sprintf("predicted throttled %s of periods at %s vs budget %s", pctOf(p.ThrottledRatio), cpu(limit), pctOf(b.MaxThrottled)))
	}
	if !(advise.Target{MaxThrottled: 1, MaxDelay: b.MaxDelayP99}).Meets(e) {
		out = append(out, fmt.Sprintf("predicted p99 added delay %.1fms at %s vs budget %s", p.DelayP99Ms, cpu(limit), b.MaxDelayP99))
	}
	return out
}

func pctOf(r float64) string { return strconv.FormatFloat(r*100, 'f', 1, 64) + "%" }

func (mc ManifestContainer) name() string {
	return mc.Workload.String() + "/" + mc.Container
}

// Violated reports whether any outcome breaks the budget.
func Violated(res []ContainerCheck) bool {
	for _, o := range res {
		if len(o.Violations) > 0 {
			return true
		}
	}
	return false
}

// WriteCheck writes one line per violation (file:line: container: predicted
// X vs budget Y), one per unchecked container (file:line: container: not
// checked: why), with verbose one per container that passed, and a summary.
func WriteCheck(w io.Writer, res []ContainerCheck, verbose bool) error {
	var checked, bad, skipped int
	for _, o := range res {
		switch {
		case o.Skip != "":
			skipped++
			fmt.Fprintf(w, "%s:%d: %s: not checked: %s\n", o.File, o.Line, o.name(), o.Skip)
		case len(o.Violations) > 0:
			checked++
			bad++
			for _, v := range o.Violations {
				fmt.Fprintf(w, "%s:%d: %s: %s (%s)\n", o.File, o.Line, o.name(), v, o.from())
			}
		default:
			checked++
			if verbose {
				fmt.Fprintf(w, "%s:%d: %s: ok at %s: throttled %s, p99 added delay %.1fms (%s)\n", o.File, o.Line, o.name(),
					cpu(o.LimitMilli), pctOf(o.Prediction.ThrottledRatio), o.Prediction.DelayP99Ms, o.from())
			}
		}
	}
	_, err := fmt.Fprintf(w, "containers: %d checked, %d over budget, %d not checked\n", checked, bad, skipped)
	return err
}

// from says what a prediction comes from: the replica (for measured demand)
// and the source; recorded demand has no pod.
func (o ContainerCheck) from() string {
	if o.Pod == "" {
		return o.Source
	}
	return "pod " + o.Pod + ", " + o.Source
}

// MissingDemand returns the outcomes of containers with a limit for which
// the source had no measured demand.
func MissingDemand(res []ContainerCheck) []ContainerCheck {
	return missing(res, func(o ContainerCheck) bool { return o.MissingDemand })
}

// missing is the outcomes, containers' or pods', for which the source had
// no demand: one filter for both.
func missing[T any](res []T, isMissing func(T) bool) []T {
	var out []T
	for _, o := range res {
		if isMissing(o) {
			out = append(out, o)
		}
	}
	return out
}

// Measured is an Evaluator over the containers the agents measured (from
// Prometheus or one agent): a proposed limit equal to one the agent
// exports a prediction for (the current limit without burst, the advised
// one, krr's, the VPA's) takes that prediction; any other is asked of the
// agent that measured the replica (/evaluate).
type Measured struct {
	Containers []*Container
	Client     *http.Client
	// Agents maps an agent's scrape target (JOB/INSTANCE, the labels of
	// the series it exported) to its base URL (DiscoverAgents); Agent, if
	// set, is the one agent to ask for all.
	Agents map[string]string
	Agent  string
	// Prometheus is the server the containers were read from, to name it.
	Prometheus string
	// Pods are the pods' own entries (a pod-level limit; PredictPod).
	Pods []*Container

	by map[Workload][]*Container
}

func (m *Measured) index() {
	if m.by != nil {
		return
	}
	m.by = map[Workload][]*Container{}
	for _, c := range m.Containers {
		w := WorkloadOf(c)
		m.by[w] = append(m.by[w], c)
	}
}

// replicas returns the measured containers of mc's workload: a CronJob's
// are its Jobs' (named after it, a dash and the schedule time in minutes).
func (m *Measured) replicas(w Workload) []*Container {
	m.index()
	if w.Kind != "CronJob" {
		return m.by[w]
	}
	var out []*Container
	for k, cs := range m.by {
		if k.Namespace == w.Namespace && k.Kind == "Job" && strings.HasPrefix(k.Name, w.Name+"-") && digitsOnly(k.Name[len(w.Name)+1:]) {
			out = append(out, cs...)
		}
	}
	return out
}

func digitsOnly(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Predict implements Evaluator.
func (m *Measured) Predict(ctx context.Context, mc ManifestContainer) (Prediction, string, string, error) {
	reps := m.replicas(mc.Workload)
	if len(reps) == 0 {
		return Prediction{}, "", "", &Skipped{fmt.Sprintf("no measured pod of %s %s in namespace %s (new, renamed, or not running where an agent is)", strings.ToLower(mc.Workload.Kind), mc.Workload.Name, mc.Workload.Namespace)}
	}
	var mine []*Container
	names := map[string]bool{}
	for _, c := range reps {
		names[c.Container] = true
		if c.Container == mc.Container {
			mine = append(mine, c)
		}
	}
	if len(mine) == 0 {
		var ns []string
		for n := range names {
			ns = append(ns, n)
		}
		sort.Strings(ns)
		return Prediction{}, "", "", &Skipped{fmt.Sprintf("container %s matches no measured container of %s %s (measured: %s)", mc.Container, strings.ToLower(mc.Workload.Kind), mc.Workload.Name, strings.Join(ns, ", "))}
	}
	var (
		worst     Prediction
		pod, src  string
		why       []string
		predicted bool
	)
	for _, c := range mine {
		p, s, err := m.predictOne(ctx, c, mc.LimitMilli)
		var sk *Skipped
		if errors.As(err, &sk) {
			why = append(why, "pod "+c.Pod+": "+sk.Why)
			continue
		}
		if err != nil {
			return Prediction{}, "", "", err
		}
		if !predicted || p.ThrottledRatio > worst.ThrottledRatio || (p.ThrottledRatio == worst.ThrottledRatio && p.DelayP99Ms > worst.DelayP99Ms) {
			worst, pod, src, predicted = p, c.Pod, s, true
		}
	}
	if !predicted {
		return Prediction{}, "", "", &Skipped{strings.Join(why, "; ")}
	}
	if len(why) > 0 {
		src += fmt.Sprintf("; %d of %d replicas not predicted: %s", len(why), len(mine), strings.Join(why, "; "))
	}
	return worst, pod, src, nil
}

func (m *Measured) predictOne(ctx context.Context, c *Container, limit int64) (Prediction, string, error) {
	for _, at := range []struct {
		name  string
		milli int64
		p     Prediction
	}{{"advised", c.AdvisedLimitMilli, c.Advised}, {"current", ifNoBurst(c), c.Current}, {"krr", c.KrrMilli, c.Krr}, {"vpa", c.VPAMilli, c.VPA}} {
		if at.milli == limit && at.p.Known {
			return at.p, "exported prediction at=" + at.name, nil
		}
	}
	base := m.Agent
	if base == "" {
		base = m.Agents[c.instance]
	}
	if base == "" {
		return Prediction{}, "", &Skipped{fmt.Sprintf("%s is none of the limits the agent exports predictions for (%s), and Prometheus has no active target %s to ask (is the agent still up?)",
			cpu(limit), exported(c), c.instance)}
	}
	e, err := AgentEvaluate(ctx, m.Client, base, c.Namespace, c.Pod, c.Container, limit, 0)
	if errors.Is(err, ErrNotFound) {
		return Prediction{}, "", &Skipped{err.Error()}
	}
	if err != nil {
		return Prediction{}, "", err
	}
	return predictionOf(e), "agent " + base + " /evaluate", nil
}

func ifNoBurst(c *Container) int64 {
	if c.BurstMilli > 0 {
		return -1
	}
	return c.LimitMilli
}

func exported(c *Container) string {
	var s []string
	for _, x := range []struct {
		n string
		m int64
	}{{"current", c.LimitMilli}, {"advised", c.AdvisedLimitMilli}, {"krr", c.KrrMilli}, {"vpa", c.VPAMilli}} {
		if x.m > 0 {
			s = append(s, x.n+" "+cpu(x.m))
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// DiscoverAgents lists the active scrape targets of the Prometheus server
// at base and maps each (JOB/INSTANCE, the labels a target gives the
// series it exports) to the base URL of its scrape URL (without its path):
// for a target that exported a container's throttlelab series, the agent
// that measured it.
func DiscoverAgents(ctx context.Context, hc *http.Client, base string) (map[string]string, error) {
	data, err := promGet(ctx, hc, base, "/api/v1/targets", map[string][]string{"state": {"active"}})
	if err != nil {
		return nil, err
	}
	ts, err := parseTargets(data)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, t := range ts {
		u := t.ScrapeURL
		if i := strings.Index(u, "://"); i >= 0 {
			if j := strings.IndexByte(u[i+3:], '/'); j >= 0 {
				u = u[:i+3+j]
			}
		}
		out[t.Labels["job"]+"/"+t.Labels["instance"]] = u
	}
	return out, nil
}

// evaluateDemand replays a recorded demand at one limit without burst.
func evaluateDemand(d *advise.Demand, limit int64) (Prediction, error) {
	evs, err := advise.Evaluate(d, []advise.Point{{LimitMilli: limit, Period: 100 * time.Millisecond}}, advise.Options{})
	if err != nil {
		return Prediction{}, err
	}
	return predictionOf(evs[0]), nil
}

// Source names where measured demand is found: exactly one of a
// Prometheus that scrapes the agents, one agent, or (for check) a directory
// of recorded CSVs.
type Source struct {
	Prometheus, Agent, Demand string
	// Target picks the agents' target when they advise for several;
	// Namespace, if set, keeps one namespace's (both through Prometheus).
	Target, Namespace string
}

// NewEvaluator returns the evaluator of s: recorded demand replayed here, or
// the agents' predictions (through Prometheus, the agents it scrapes are
// asked for the limits they did not predict).
func NewEvaluator(ctx context.Context, hc *http.Client, s Source) (Evaluator, error) {
	switch {
	case s.Demand != "":
		fi, err := os.Stat(s.Demand)
		if err != nil {
			return nil, &DemandError{s.Demand, errors.New("no such directory: give the directory of recorded demand (DIR/NAMESPACE/WORKLOAD/CONTAINER.csv)")}
		}
		if !fi.IsDir() {
			return nil, &DemandError{s.Demand, errors.New("not a directory: give the directory of recorded demand (DIR/NAMESPACE/WORKLOAD/CONTAINER.csv)")}
		}
		return &Recorded{Dir: s.Demand}, nil
	case s.Agent != "":
		cs, pods, err := ReadWithPods(ctx, hc, s)
		if err != nil {
			return nil, err
		}
		return &Measured{Containers: cs, Pods: pods, Client: hc, Agent: s.Agent}, nil
	}
	cs, pods, err := ReadWithPods(ctx, hc, s)
	if err != nil {
		return nil, err
	}
	agents, err := DiscoverAgents(ctx, hc, s.Prometheus)
	if err != nil {
		return nil, err
	}
	return &Measured{Containers: cs, Pods: pods, Client: hc, Agents: agents, Prometheus: s.Prometheus}, nil
}
