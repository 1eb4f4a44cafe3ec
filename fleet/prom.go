package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/throttlelab/throttlelab/watch"
)

// Errors of a source that answered but had nothing usable.
var (
	// ErrNoData: the source holds no container the agent summarises.
	ErrNoData = errors.New("no throttlelab_container_info series")
	// ErrTargets: the agents advise for several targets and none was chosen.
	ErrTargets = errors.New("several targets")
	// ErrNoSuchTarget: the target asked for is not one the agents advise for.
	ErrNoSuchTarget = errors.New("no such target")
	// ErrUnreachable: the source could not be asked (connection refused,
	// DNS, timeout) or answered with an HTTP error.
	ErrUnreachable = errors.New("unreachable")
)

// PromOptions narrow what FromPrometheus reads.
type PromOptions struct {
	// Namespace, if set, reads only this namespace.
	Namespace string
	// Target is the agents' target label to read the advice of; empty
	// takes the only one there is.
	Target string
}

// series are the metric names FromPrometheus reads, in one query.
const seriesRegex = "throttlelab_(container_info|container_cpu_(limit|request|burst)_cores|advised_cpu_(limit|burst)_cores|predicted_(throttled_ratio|delay_p99_seconds)|krr_cpu_cores|vpa_cpu_target_cores|demand_(window_seconds|stationary)|startup_throttled_ratio|runtime_(info|parallelism))"

// contract are the series names of the agent's contract that FromPrometheus
// reads (seriesRegex matches exactly these).
var contract = map[string]bool{
	"throttlelab_container_info": true, "throttlelab_container_cpu_limit_cores": true, "throttlelab_container_cpu_request_cores": true,
	"throttlelab_container_cpu_burst_cores": true, "throttlelab_advised_cpu_limit_cores": true, "throttlelab_advised_cpu_burst_cores": true,
	"throttlelab_predicted_throttled_ratio": true, "throttlelab_predicted_delay_p99_seconds": true, "throttlelab_krr_cpu_cores": true,
	"throttlelab_vpa_cpu_target_cores": true, "throttlelab_demand_window_seconds": true, "throttlelab_demand_stationary": true,
	"throttlelab_startup_throttled_ratio": true, "throttlelab_runtime_info": true, "throttlelab_runtime_parallelism": true,
}

// Sample is one series of an instant vector.
type Sample struct {
	Metric map[string]string
	Value  float64
}

// promResponse is the envelope of Prometheus' HTTP API.
type promResponse struct {
	Status    string          `json:"status"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Data      json.RawMessage `json:"data"`
}

type vectorData struct {
	ResultType string `json:"resultType"`
	Result     []struct {
		Metric map[string]string  `json:"metric"`
		Value  [2]json.RawMessage `json:"value"`
	} `json:"result"`
}

// promGet calls Prometheus' API at base+path with the query q and returns
// the data of a successful answer.
func promGet(ctx context.Context, hc *http.Client, base, path string, q url.Values) (json.RawMessage, error) {
	u := strings.TrimRight(base, "/") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("the Prometheus URL %s: %w: give the server's base URL, such as http://prometheus:9090", base, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the Prometheus at %s is %w: %v: check the URL (port-forward with kubectl -n monitoring port-forward svc/prometheus 9090)", base, ErrUnreachable, err)
	}
	defer resp.Body.Close()
	var pr promResponse
	derr := json.NewDecoder(resp.Body).Decode(&pr)
	if derr != nil || pr.Status == "" {
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("the Prometheus at %s: %s %s: %w (is it Prometheus' base URL?)", base, path, resp.Status, ErrUnreachable)
		}
		return nil, fmt.Errorf("the Prometheus at %s: %s: not Prometheus' API answer (%v): give the server's base URL, without /api/v1", base, path, derr)
	}
	if pr.Status != "success" {
		return nil, fmt.Errorf("the Prometheus at %s: %s: %s: %s", base, path, pr.ErrorType, pr.Error)
	}
	return pr.Data, nil
}

// Query runs an instant query and returns its vector.
func Query(ctx context.Context, hc *http.Client, base, expr string) ([]Sample, error) {
	data, err := promGet(ctx, hc, base, "/api/v1/query", url.Values{"query": {expr}})
	if err != nil {
		return nil, err
	}
	return parseVector(data)
}

func parseVector(data []byte) ([]Sample, error) {
	var v vectorData
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("the Prometheus query result: %w", err)
	}
	if v.ResultType != "vector" {
		return nil, fmt.Errorf("the Prometheus query result is a %s, not an instant vector", v.ResultType)
	}
	out := make([]Sample, 0, len(v.Result))
	for _, r := range v.Result {
		s, err := strconv.Unquote(string(r.Value[1]))
		if err != nil {
			return nil, fmt.Errorf("a Prometheus sample value %s: %w", r.Value[1], err)
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("a Prometheus sample value %q: %w", s, err)
		}
		out = append(out, Sample{Metric: r.Metric, Value: f})
	}
	return out, nil
}

// FromPrometheus reads every container the agents export through the
// Prometheus server at base: one instant query for all of the agent's
// advice series.
// The pods' own series (container "": a pod-level limit) are left out:
// fromPrometheus has them.
func FromPrometheus(ctx context.Context, hc *http.Client, base string, o PromOptions) ([]*Container, error) {
	cs, _, err := fromPrometheus(ctx, hc, base, o)
	return cs, err
}

// fromPrometheus is FromPrometheus with the pods' own series apart.
func fromPrometheus(ctx context.Context, hc *http.Client, base string, o PromOptions) (containers, pods []*Container, err error) {
	sel := `__name__=~"` + seriesRegex + `"`
	if o.Namespace != "" {
		sel += `,namespace="` + strings.ReplaceAll(o.Namespace, `"`, `\"`) + `"`
	}
	ss, err := Query(ctx, hc, base, "{"+sel+"}")
	if err != nil {
		return nil, nil, err
	}
	all, err := fromSamples(ss, base, o)
	if err != nil {
		return nil, nil, err
	}
	containers, pods = splitPods(all)
	return containers, pods, nil
}

// fromSamples joins the series by namespace, pod and container.
func fromSamples(ss []Sample, base string, o PromOptions) ([]*Container, error) {
	type key struct{ ns, pod, c string }
	by := map[key]*Container{}
	var order []key
	get := func(m map[string]string) *Container {
		k := key{m["namespace"], m["pod"], m["container"]}
		c := by[k]
		if c == nil {
			c = &Container{Namespace: k.ns, Pod: k.pod, Container: k.c}
			by[k] = c
			order = append(order, k)
		}
		return c
	}
	milli := func(v float64) int64 { return int64(v*1000 + 0.5) }
	targets := map[string]bool{}
	type adv struct {
		limit, burst int64
	}
	advised := map[key]map[string]*adv{}
	infos := 0
	for _, s := range ss {
		m := s.Metric
		// Scraped without honor_labels, the agent pod's own target labels
		// win and the container's move to exported_*.
		for _, l := range []string{"namespace", "pod", "container"} {
			if v, ok := m["exported_"+l]; ok {
				m[l] = v
			}
		}
		name := m["__name__"]
		if !contract[name] {
			continue // another series (top's throttlelab_cpu_*, a recording rule): no container of its own
		}
		c := get(m)
		switch name {
		case "throttlelab_container_info":
			infos++
			c.OwnerKind, c.OwnerName, c.Node, c.Cgroup = m["owner_kind"], m["owner_name"], m["node"], m["cgroup"]
			c.instance = m["job"] + "/" + m["instance"]
		case "throttlelab_container_cpu_limit_cores":
			c.LimitMilli = milli(s.Value)
		case "throttlelab_container_cpu_request_cores":
			c.RequestMilli = milli(s.Value)
		case "throttlelab_container_cpu_burst_cores":
			c.BurstMilli = milli(s.Value)
		case "throttlelab_krr_cpu_cores":
			c.KrrMilli = milli(s.Value)
		case "throttlelab_vpa_cpu_target_cores":
			c.VPAMilli = milli(s.Value)
		case "throttlelab_demand_window_seconds":
			c.WindowSeconds = s.Value
		case "throttlelab_demand_stationary":
			c.NotStationary = s.Value == 0
		case "throttlelab_startup_throttled_ratio":
			if m["at"] == "advised" {
				v := s.Value
				c.StartupAdvised = &v
			}
		case "throttlelab_runtime_info", "throttlelab_runtime_parallelism":
			c.noteRuntime(name, m, s.Value) // row.go
		case "throttlelab_advised_cpu_limit_cores", "throttlelab_advised_cpu_burst_cores":
			t := m["target"]
			targets[t] = true
			k := key{m["namespace"], m["pod"], m["container"]}
			if advised[k] == nil {
				advised[k] = map[string]*adv{}
			}
			a := advised[k][t]
			if a == nil {
				a = &adv{}
				advised[k][t] = a
			}
			if name == "throttlelab_advised_cpu_limit_cores" {
				a.limit = milli(s.Value)
			} else {
				a.burst = milli(s.Value)
			}
		case "throttlelab_predicted_throttled_ratio", "throttlelab_predicted_delay_p99_seconds":
			p := c.prediction(m["at"])
			if p == nil {
				continue
			}
			p.Known = true
			if name == "throttlelab_predicted_throttled_ratio" {
				p.ThrottledRatio = s.Value
			} else {
				p.DelayP99Ms = math.Round(s.Value*1e9) / 1e6 // to the ns: seconds*1000 in floats is 10.200000000000001
			}
		}
	}
	where := "Prometheus at " + base
	if o.Namespace != "" {
		where += " (namespace " + o.Namespace + ")"
	}
	if infos == 0 {
		return nil, fmt.Errorf("%s: %w: is the throttlelab agent deployed and scraped (docs/fleet.md), and is this the Prometheus that scrapes it?", where, ErrNoData)
	}
	target := o.Target
	if target == "" && len(targets) > 1 {
		var names []string
		for t := range targets {
			names = append(names, t)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%s: the agents advise for %w (%s): choose one", where, ErrTargets, strings.Join(names, ", "))
	}
	if target != "" && len(targets) > 0 && !targets[target] {
		var names []string
		for t := range targets {
			names = append(names, t)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%s: target %q: %w: the agents advise for %s", where, target, ErrNoSuchTarget, strings.Join(names, ", "))
	}
	out := make([]*Container, 0, len(order))
	for _, k := range order {
		c := by[k]
		// A pod's own group (its cgroup names a pod, no container): its
		// series have container "" as cAdvisor's pod-level series; a
		// scrape that put the target's container label on them is undone.
		if c.Cgroup != "" && watch.Identify(c.Cgroup, nil).Kind == watch.KindPod {
			c.podLevel, c.Container = true, ""
		}
		for t, a := range advised[k] {
			if target == "" || t == target {
				c.AdvisedLimitMilli, c.AdvisedBurstMilli = a.limit, a.burst
			}
		}
		explain(c)
		out = append(out, c)
	}
	return out, nil
}

// prediction returns the prediction the at label names, nil for another.
func (c *Container) prediction(at string) *Prediction {
	switch at {
	case "current":
		return &c.Current
	case "advised":
		return &c.Advised
	case "krr":
		return &c.Krr
	case "vpa":
		return &c.VPA
	}
	return nil
}

// explain fills Reason for what is missing, and VPALimitMilli.
func explain(c *Container) {
	if c.VPAMilli > 0 && c.LimitMilli > 0 {
		req := c.RequestMilli
		if req <= 0 {
			req = c.LimitMilli // a limit alone is also the request
		}
		c.VPALimitMilli = (c.VPAMilli*c.LimitMilli + req - 1) / req
	}
	var why []string
	if c.Reason != "" {
		why = append(why, c.Reason)
	}
	if c.WindowSeconds <= 0 && c.AdvisedLimitMilli == 0 {
		why = append(why, "no samples yet (the agent has not summarised this container)")
	} else if c.AdvisedLimitMilli == 0 {
		why = append(why, "no advice yet (window "+strconv.FormatFloat(c.WindowSeconds, 'f', 0, 64)+" s)")
	}
	if c.LimitMilli == 0 {
		why = append(why, "no CPU limit now (nothing throttles it)")
	}
	c.Reason = strings.Join(why, "; ")
}
