package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/agent"
	"github.com/throttlelab/throttlelab/schemas"
	"github.com/throttlelab/throttlelab/units"
)

// AgentDoc is an agent's /advice answer.
type AgentDoc struct {
	Node       string           `json:"node"`
	Containers []AgentContainer `json:"containers"`
}

// AgentContainer is one container of an agent's /advice answer: the
// agent's own type, so that the client and the server read one contract.
type AgentContainer = agent.View

// ErrNotFound: the agent does not know the container, or has no demand for
// it yet.
var ErrNotFound = errors.New("not measured")

// agentGet GETs base+path into v.
func agentGet(ctx context.Context, hc *http.Client, base, path string, v any) error {
	u := strings.TrimRight(base, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("agent %s: %w: give its base URL, such as http://10.0.0.5:9101", base, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("agent at %s is %w: %v: check the URL (kubectl -n throttlelab-agent port-forward pod/AGENT 9101)", base, ErrUnreachable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&e)
		if e.Error == "" {
			e.Error = resp.Status
		}
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusServiceUnavailable {
			return fmt.Errorf("agent at %s: %w: %s", base, ErrNotFound, e.Error)
		}
		return fmt.Errorf("agent at %s: %s: %s", base, strings.SplitN(path, "?", 2)[0], e.Error)
	}
	if err := schemas.Decode(resp.Body, v); err != nil { // an older agent's names too
		return fmt.Errorf("agent at %s: %s: not the agent's JSON (%v): is it a throttlelab agent?", base, strings.SplitN(path, "?", 2)[0], err)
	}
	return nil
}

// AgentEvaluate asks the agent at base what limit and burst (millicores)
// would do to one container over its window.
func AgentEvaluate(ctx context.Context, hc *http.Client, base, namespace, pod, container string, limitMilli, burstMilli int64) (advise.Evaluation, error) {
	q := url.Values{"namespace": {namespace}, "pod": {pod}, "container": {container},
		"limit": {units.FormatMilliCPU(limitMilli)}, "burst": {units.FormatMilliCPU(burstMilli)}}
	var e advise.Evaluation
	err := agentGet(ctx, hc, base, "/evaluate?"+q.Encode(), &e)
	return e, err
}

// FromAgent reads one agent's /advice: the containers of its node. A
// prediction the advice does not hold (the current limit, krr's and the
// VPA's off its grid) is asked of the agent's /evaluate. The pods' own
// entries (pod-level limits) are left out: fromAgent has them.
func FromAgent(ctx context.Context, hc *http.Client, base string) ([]*Container, error) {
	cs, _, err := fromAgent(ctx, hc, base)
	return cs, err
}

// fromAgent is FromAgent with the pods' own entries apart (Container "":
// the agent summarises a pod's group where it has a pod-level limit).
func fromAgent(ctx context.Context, hc *http.Client, base string) (containers, pods []*Container, err error) {
	all, err := fromAgentAll(ctx, hc, base)
	if err != nil {
		return nil, nil, err
	}
	containers, pods = splitPods(all)
	return containers, pods, nil
}

// splitPods puts the pods' own entries apart from the containers.
func splitPods(all []*Container) (containers, pods []*Container) {
	for _, c := range all {
		if c.podLevel {
			pods = append(pods, c)
		} else {
			containers = append(containers, c)
		}
	}
	return containers, pods
}

func fromAgentAll(ctx context.Context, hc *http.Client, base string) ([]*Container, error) {
	var doc AgentDoc
	if err := agentGet(ctx, hc, base, "/advice", &doc); err != nil {
		return nil, err
	}
	if len(doc.Containers) == 0 {
		return nil, fmt.Errorf("agent at %s (node %s): %w: it summarises no container yet", base, doc.Node, ErrNoData)
	}
	out := make([]*Container, 0, len(doc.Containers))
	for _, ac := range doc.Containers {
		c := &Container{Namespace: ac.Namespace, Pod: ac.Pod, Container: ac.Container, OwnerKind: ac.OwnerKind, OwnerName: ac.OwnerName,
			Node: doc.Node, Cgroup: ac.Cgroup, LimitMilli: ac.LimitMilli, RequestMilli: ac.RequestMilli, BurstMilli: ac.BurstMilli,
			KrrMilli: ac.KrrMilli, VPAMilli: ac.VPAMilli, WindowSeconds: ac.WindowSeconds, Reason: ac.Why, instance: base,
			podLevel: ac.Kind == agent.KindPod, Runtime: ac.Runtime}
		if a := ac.Advice; a != nil {
			r := a.Recommendation
			c.NotStationary = !a.Window.Stationary
			if st := ac.Startup; st != nil && st.AtAdvised != nil {
				v := st.AtAdvised.ThrottledRatio
				c.StartupAdvised = &v
			}
			c.AdvisedLimitMilli = r.LimitMilli
			c.Advised = predictionOf(r.Evaluation)
			if r.WithBurst != nil {
				c.AdvisedBurstMilli = r.WithBurst.LimitMilli
			}
			if !r.Met {
				c.Reason = joinReason(c.Reason, "no limit on the agent's grid meets the target: the largest is shown")
			}
			for _, p := range []struct {
				milli, burst int64
				into         *Prediction
			}{{c.LimitMilli, c.BurstMilli, &c.Current}, {c.KrrMilli, 0, &c.Krr}, {c.VPAMilli, 0, &c.VPA}} {
				if p.milli <= 0 {
					continue
				}
				if e := find(a.Evaluations, p.milli, p.burst); e != nil {
					*p.into = predictionOf(*e)
					continue
				}
				// A limit no quota can be set at (krr's 1m for an idle
				// container: under the kubelet's 1 ms) has no prediction,
				// as the agent exports none for it.
				pt := advise.Point{LimitMilli: p.milli, BurstMilli: p.burst, Period: time.Duration(r.PeriodUsec) * time.Microsecond}
				if pt.Period <= 0 {
					pt.Period = 100 * time.Millisecond
				}
				if pt.Check() != nil {
					continue
				}
				e, err := AgentEvaluate(ctx, hc, base, c.Namespace, c.Pod, c.Container, p.milli, p.burst)
				if errors.Is(err, ErrNotFound) {
					continue
				}
				if err != nil {
					return nil, err
				}
				*p.into = predictionOf(e)
			}
		}
		explain(c)
		out = append(out, c)
	}
	return out, nil
}

// find returns the evaluation of limit and burst at the first period, or nil.
func find(evs []advise.Evaluation, limit, burst int64) *advise.Evaluation {
	for i := range evs {
		if evs[i].LimitMilli == limit && evs[i].BurstMilli == burst && evs[i].PeriodUsec == evs[0].PeriodUsec {
			return &evs[i]
		}
	}
	return nil
}

func predictionOf(e advise.Evaluation) Prediction {
	return Prediction{Known: true, ThrottledRatio: e.ThrottledRatio, DelayP99Ms: e.DelayP99Ms}
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// Read reads the containers' advice from src's Prometheus (every node's
// agent, in src.Namespace if set, for src.Target) or its one agent.
func Read(ctx context.Context, hc *http.Client, src Source) ([]*Container, error) {
	cs, _, err := ReadWithPods(ctx, hc, src)
	return cs, err
}

// ReadWithPods is Read with the pods' own series apart: a pod whose group
// has a pod-level limit, summarised by its node's agent as a container is
// (container "" as cAdvisor labels pod-level series).
func ReadWithPods(ctx context.Context, hc *http.Client, src Source) (containers, pods []*Container, err error) {
	switch {
	case src.Prometheus != "" && src.Agent != "":
		return nil, nil, errors.New("give Prometheus or an agent, not both")
	case src.Prometheus != "":
		return fromPrometheus(ctx, hc, src.Prometheus, PromOptions{Namespace: src.Namespace, Target: src.Target})
	case src.Agent != "":
		return fromAgent(ctx, hc, src.Agent)
	}
	return nil, nil, errors.New("no source: give Prometheus or an agent")
}
