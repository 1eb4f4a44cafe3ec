package agent

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/watch"
)

// Names are a container's labels.
type Names struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Container string `json:"container"`
	OwnerKind string `json:"owner_kind"`
	OwnerName string `json:"owner_name"`
	Cgroup    string `json:"cgroup"`
	// Kind is KindPod for a pod's own group (its pod-level limit; Container
	// is then ""), empty for a container.
	Kind string `json:"kind,omitempty"`
}

// View is one container's current settings, advice and predictions.
type View struct {
	Names
	LimitMilli    int64   `json:"limit_millicores"`
	RequestMilli  int64   `json:"request_millicores"`
	BurstMilli    int64   `json:"burst_millicores"`
	KrrMilli      int64   `json:"krr_millicores"`
	VPAMilli      int64   `json:"vpa_millicores"`
	WindowSeconds float64 `json:"window_seconds"`
	// CPUsUsed is the most CPUs the container ran on over a chunk (each
	// with 2% or more of its CPU time), from the per-CPU counters read
	// while it was hot; 0 where none were read (ContainerSummary.CPUs).
	CPUsUsed int `json:"cpus_used,omitempty"`
	// Advice is for the first target, as advise --json prints it.
	Advice *advise.Advice `json:"advice"`
	// Why is set when there is no advice yet.
	Why string `json:"why,omitempty"`
	// Startup is the container's start-up, kept apart from the advice
	// (Config.Startup); nil when the agent did not see it start.
	Startup *Startup `json:"startup,omitempty"`
	// Runtime is the runtime inside the container and its parallelism
	// (read at discovery and on exec); nil when none is known, RuntimeWhy
	// then says why. The advice's runtime object has the same and the
	// rules.
	Runtime    *RuntimeInfo `json:"runtime,omitempty"`
	RuntimeWhy string       `json:"runtime_why,omitempty"`

	hasLimit, hasRequest bool
	advised, stationary  bool // there is advice; its window is stationary
	perTarget            []advise.Recommendation
	at                   map[string]*advise.Evaluation // current, advised, krr, vpa
	audit                *advise.Audit                 // the advice's self-audit at the current limit
}

// Startup is what a container's start-up asked for and what limits would
// do to it.
type Startup struct {
	Seconds      float64 `json:"seconds"`
	MeanCores    float64 `json:"mean_cores"`
	MaxCores10ms float64 `json:"max_cores_10ms"`
	// AtAdvised and AtCurrent replay the start-up alone at the advised and
	// the current limit.
	AtAdvised *advise.Evaluation `json:"at_advised,omitempty"`
	AtCurrent *advise.Evaluation `json:"at_current,omitempty"`
	// Delay is how much the current limit lengthens the start-up
	// (replayed unlimited against it); nil without a limit or a start-up
	// long enough to measure.
	Delay *StartupDelay `json:"delay,omitempty"`
	// Boost is the CPU to give the start-up, and for how long, sized
	// against the advised limit (else the current one); BoostWhy says why
	// there is none. Both are the newest start-up's when the group
	// started more than once.
	Boost    *StartupBoost `json:"boost,omitempty"`
	BoostWhy string        `json:"boost_why,omitempty"`
}

// startupOf describes c's start-up; c.mu is held. It runs with the view
// (once per fold, or per /advice), never per sample.
func (a *Agent) startupOf(c *container, v *View) *Startup {
	b := c.sum.Startup()
	if b == nil || b.Span <= 0 {
		return nil
	}
	st := &Startup{Seconds: b.Span.Seconds(), MeanCores: b.Work / float64(b.Span), MaxCores10ms: b.MaxCores}
	if v.Advice != nil {
		st.AtAdvised = c.sum.StartupEvaluation(v.Advice.Recommendation.LimitMilli, v.Advice.Recommendation.BurstMilli)
	}
	if v.hasLimit {
		st.AtCurrent = c.sum.StartupEvaluation(v.LimitMilli, v.BurstMilli)
		st.Delay = a.startupDelayOf(c, v.LimitMilli)
	}
	limit := v.LimitMilli
	if v.Advice != nil {
		limit = v.Advice.Recommendation.LimitMilli
	}
	st.Boost, st.BoostWhy = a.startupBoostOf(c, v, limit)
	return st
}

func milliOfCores(c *float64) (int64, bool) {
	if c == nil {
		return 0, false
	}
	return int64(*c*1000 + 0.5), true
}

// viewOf returns c's view; c.mu is held. The view c keeps (for the
// metrics, until its summary changes) has no Advice: the full advice of
// every container (every point evaluated, the window's blocks) would be a
// tenth of the agent's memory on a node of 200 (BenchmarkAgentDay200), and
// only /advice shows it, so full computes it anew.
func (a *Agent) viewOf(c *container, owners map[watch.PodName]Owner, full bool) *View {
	if c.view != nil && !full {
		c.view.Names = namesOf(c.path, c.id, owners)
		return c.view
	}
	a.evaluations.Add(1)
	v := &View{Names: namesOf(c.path, c.id, owners), at: map[string]*advise.Evaluation{}}
	v.LimitMilli, v.hasLimit = milliOfCores(c.last.LimitCores)
	v.RequestMilli, v.hasRequest = milliOfCores(c.last.RequestCores)
	v.BurstMilli = int64(c.last.BurstCores*1000 + 0.5)
	span, _ := c.sum.Span()
	v.WindowSeconds = span.Seconds()
	v.CPUsUsed = c.sum.CPUs()
	rec := c.sum.Recommenders()
	v.KrrMilli, v.VPAMilli = rec.KrrMilli, rec.VPAMilli
	targets := make([]advise.Target, len(a.cfg.Targets))
	for i, t := range a.cfg.Targets {
		targets[i] = t.Target
	}
	advs, err := c.sum.AdviceFor(AdviceInput{Source: "agent " + a.cfg.Node + ":" + c.path, LimitMilli: v.LimitMilli}, targets)
	if err != nil {
		v.Why = err.Error()
	} else {
		v.Advice, v.advised, v.stationary = advs[0], true, advs[0].Window.Stationary
		v.audit = advs[0].Audit
		for _, adv := range advs {
			r := adv.Recommendation
			if r.WithBurst != nil { // a copy: the pointer holds all the advice's evaluations
				wb := *r.WithBurst
				r.WithBurst = &wb
			}
			v.perTarget = append(v.perTarget, r)
		}
	}
	if v.Advice != nil {
		eval := func(name string, limit, burst int64) {
			if limit <= 0 {
				return
			}
			if e, err := c.sum.Evaluate(limit, burst); err == nil {
				v.at[name] = &e
			}
		}
		if v.hasLimit {
			eval("current", v.LimitMilli, v.BurstMilli)
		}
		r := v.Advice.Recommendation.Evaluation
		v.at["advised"] = &r
		eval("krr", v.KrrMilli, 0)
		eval("vpa", v.VPAMilli, 0)
	}
	v.Startup = a.startupOf(c, v)
	a.runtimeView(c, v)
	kept := *v
	kept.Advice = nil
	c.view = &kept
	if full {
		return v
	}
	return c.view
}

// Views returns every container's view with its full advice (computed
// anew), sorted by namespace, pod, container.
func (a *Agent) Views() []*View {
	var out []*View
	a.eachView(true, func(v *View) error { out = append(out, v); return nil })
	return out
}

// views returns the views without Advice (the metrics need none of it),
// recomputed only for containers whose summary changed, sorted as Views.
func (a *Agent) views() []*View {
	var out []*View
	a.eachView(false, func(v *View) error { out = append(out, v); return nil })
	return out
}

// eachView calls fn with every container's view in Views' order, until fn
// fails; with full, the view has its Advice. Each view is computed as fn
// is called, so that /advice holds one container's full advice at a time,
// not a node's.
func (a *Agent) eachView(full bool, fn func(*View) error) error {
	return a.eachContainer(func(c *container, owners map[watch.PodName]Owner, _ Names) error {
		return fn(a.viewOf(c, owners, full))
	})
}

// eachAdvice calls fn with every container's entry in /advice (its full
// view as JSON, indented for the document), in Views' order, until fn
// fails. An entry is computed once per fold (and when the container's
// settings or names change) and kept, compressed (the JSON of a day's
// advice is tens of KiB a container: BenchmarkAgentDay200), until then:
// requests between folds are served what the last one computed. fn must
// not keep the bytes.
func (a *Agent) eachAdvice(fn func([]byte) error) error {
	var buf bytes.Buffer
	return a.eachContainer(func(c *container, owners map[watch.PodName]Owner, n Names) error {
		buf.Reset()
		if c.advice == nil || c.adviceNames != n {
			b, err := json.MarshalIndent(a.viewOf(c, owners, true), "    ", "  ")
			if err != nil {
				return err
			}
			var z bytes.Buffer
			w, _ := flate.NewWriter(&z, flate.BestSpeed)
			w.Write(b)
			w.Close()
			c.advice, c.adviceNames = bytes.Clone(z.Bytes()), n
			return fn(b)
		}
		if _, err := buf.ReadFrom(flate.NewReader(bytes.NewReader(c.advice))); err != nil {
			return err
		}
		return fn(buf.Bytes())
	})
}

// eachContainer calls fn with every container, its mutex held, in Views'
// order (by namespace, pod, container and cgroup path), until fn fails.
func (a *Agent) eachContainer(fn func(c *container, owners map[watch.PodName]Owner, n Names) error) error {
	a.mu.Lock()
	type entry struct {
		c *container
		n Names
	}
	es := make([]entry, 0, len(a.containers))
	for _, c := range a.containers {
		c.mu.Lock() // Update sets id under it
		id := c.id
		c.mu.Unlock()
		es = append(es, entry{c, namesOf(c.path, id, a.owners)})
	}
	owners := a.owners
	a.mu.Unlock()
	sort.Slice(es, func(i, j int) bool {
		x, y := es[i].n, es[j].n
		if x.Namespace != y.Namespace {
			return x.Namespace < y.Namespace
		}
		if x.Pod != y.Pod {
			return x.Pod < y.Pod
		}
		if x.Container != y.Container {
			return x.Container < y.Container
		}
		return x.Cgroup < y.Cgroup
	})
	for _, e := range es {
		e.c.mu.Lock()
		err := fn(e.c, owners, e.n)
		e.c.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// ErrNoContainer marks a lookup that matches no container.
var ErrNoContainer = errors.New("no such container")

// Evaluate evaluates a limit and burst for the container named so.
func (a *Agent) Evaluate(namespace, pod, name string, limitMilli, burstMilli int64) (advise.Evaluation, error) {
	a.mu.Lock()
	var found []*container
	for _, c := range a.containers {
		c.mu.Lock()
		n := namesOf(c.path, c.id, nil)
		c.mu.Unlock()
		if n.Namespace == namespace && n.Pod == pod && n.Container == name {
			found = append(found, c)
		}
	}
	a.mu.Unlock()
	switch len(found) {
	case 0:
		return advise.Evaluation{}, fmt.Errorf("%w %s/%s/%s on this node: see /advice for the names", ErrNoContainer, namespace, pod, name)
	case 1:
	default:
		return advise.Evaluation{}, fmt.Errorf("%s/%s/%s names %d groups on this node", namespace, pod, name, len(found))
	}
	c := found[0]
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sum.Evaluate(limitMilli, burstMilli)
}
