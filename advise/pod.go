package advise

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
)

// A pod's CPU can be limited three ways (Kubernetes 1.34+ adds the second
// and third): a limit per container, one pod-level limit over all of them
// (a quota on the pod's cgroup), or both (container limits inside a pod
// limit, each quota applying). AdvisePod replays the containers' demand
// through each with the nested replay (cfs.ReplayNested) and finds, for
// each, the cheapest setting that meets the target.

// The settings AdvisePod compares (PodOption.Setting).
const (
	PodPerContainer = "per-container"
	PodLevel        = "pod-level"
	PodBoth         = "both"
)

// DefaultPodPhases is how many phases of the period AdvisePod replays when
// told nothing else.
const DefaultPodPhases = 4

// PodDemand is one pod's containers' demand on one time axis
// (cfs.AlignDemands), named as the pod names its containers.
type PodDemand struct {
	Names   []string
	Demands []*Demand
	// Source says where the demand came from.
	Source string
}

// PodRequest says what AdvisePod aims at.
type PodRequest struct {
	// Target holds for every pool (the pod's and each container's own
	// throttled share) and, with a delay bound, each container's p99
	// added delay.
	Target Target
	// Period is the period of every quota (default 100 ms).
	Period time.Duration
	// Phases is how many phases of the period to replay (default
	// DefaultPodPhases).
	Phases int
}

// ContainerOutcome is what one setting does to one container.
type ContainerOutcome struct {
	Name string `json:"name"`
	// LimitMilli is the container's own limit (0: none).
	LimitMilli int64   `json:"limit_millicores,omitempty"`
	MeanCores  float64 `json:"mean_cores"`
	// ThrottledRatio is the throttled share of its own quota's periods
	// (0 without one), ThrottledSeconds its own quota's throttled time,
	// both means over the phases.
	ThrottledRatio   float64 `json:"throttled_periods_ratio"`
	ThrottledSeconds float64 `json:"throttled_seconds"`
	// PodThrottledSeconds is the time its CPUs waited for the pod's quota
	// (with its own not spent): its wait owed to the pod's other
	// containers as much as to itself.
	PodThrottledSeconds float64 `json:"pod_throttled_seconds"`
	// Delays its work waited, for either quota, all phases pooled.
	DelayP50Ms float64 `json:"added_delay_p50_ms"`
	DelayP99Ms float64 `json:"added_delay_p99_ms"`
	DelayMaxMs float64 `json:"added_delay_max_ms"`
}

// PodOption is the cheapest setting of one kind that meets the target (or,
// when none does, the most generous one tried).
type PodOption struct {
	Setting string `json:"setting"`
	// PodLimitMilli is the pod-level limit (0: none).
	PodLimitMilli int64 `json:"pod_limit_millicores,omitempty"`
	// CostMilli is the most CPU the setting lets the pod use: the pod's
	// limit, or the containers' limits summed, whichever is lower.
	CostMilli int64 `json:"cost_millicores"`
	Met       bool  `json:"met"`
	// PodThrottledRatio and PodThrottledSeconds are the pod quota's own
	// counts (0 without one), means over the phases.
	PodThrottledRatio   float64            `json:"pod_throttled_periods_ratio"`
	PodThrottledSeconds float64            `json:"pod_throttled_seconds"`
	Containers          []ContainerOutcome `json:"containers"`
}

// PodSampled describes the pod's samples.
type PodSampled struct {
	Source          string   `json:"source"`
	Containers      []string `json:"containers"`
	DurationSeconds float64  `json:"duration_seconds"`
	Samples         int      `json:"samples"`
	// MeanCores and MaxCores10ms are the containers' use summed.
	MeanCores    float64 `json:"mean_cores"`
	MaxCores10ms float64 `json:"max_cores_10ms"`
	Phases       int     `json:"phases"`
	PeriodUsec   int64   `json:"period_us"`
}

// PodAdvice is AdvisePod's answer: the three settings and which is
// cheapest.
type PodAdvice struct {
	Target  Target     `json:"target"`
	Sampled PodSampled `json:"sampled"`
	// Options are per-container limits, one pod-level limit, and both, in
	// that order.
	Options []PodOption `json:"options"`
	// Cheapest is the Setting of the cheapest option that meets the target
	// ("" when none does); on a tie the simpler (pod-level before both).
	Cheapest string `json:"cheapest,omitempty"`
	// SavedMilli is how much less the cheapest costs than the cheaper of
	// the other two kinds that meet the target (per-container against
	// pod-level, whichever is not the cheapest; 0 when only one meets).
	SavedMilli int64 `json:"saved_millicores"`
	// Against is the setting SavedMilli is counted against.
	Against  string   `json:"against,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// Option returns the option of setting s.
func (a *PodAdvice) Option(s string) *PodOption {
	for i := range a.Options {
		if a.Options[i].Setting == s {
			return &a.Options[i]
		}
	}
	return nil
}

// ErrOneContainer marks a pod of fewer than two containers: its pod-level
// limit is its container's.
var ErrOneContainer = errors.New("one container")

// podRun replays one pod's demand at every phase.
type podRun struct {
	pd     PodDemand
	cores  []float64
	period time.Duration
	phases int
	target Target
	err    error // the first replay refused (the demands were checked and aligned: not expected)
}

// AdvisePod finds, on the same demand, the cheapest per-container limits,
// the cheapest pod-level limit and the cheapest pod limit around the
// per-container limits that meet req's target, with each container's
// delays, and says which is cheapest.
func AdvisePod(pd PodDemand, req PodRequest) (*PodAdvice, error) {
	if len(pd.Demands) < 2 {
		return nil, fmt.Errorf("%w: a pod-level limit over one container is that container's limit: advise its demand on its own", ErrOneContainer)
	}
	if len(pd.Names) != len(pd.Demands) {
		return nil, fmt.Errorf("%d names for %d containers", len(pd.Names), len(pd.Demands))
	}
	r, err := newPodRun(pd, req)
	if err != nil {
		return nil, err
	}
	a := &PodAdvice{Target: r.target, Sampled: r.sampled()}

	// (a) Per container: without a pod quota the containers do not meet,
	// so each one's cheapest limit is found on its own.
	limits := make([]int64, len(pd.Demands))
	for i := range pd.Demands {
		limits[i] = r.search(r.hiMilli(i), func(m int64) bool {
			l := make([]int64, len(limits))
			l[i] = m
			return r.eval(PodPerContainer, 0, l, i).Met
		})
	}
	perC := r.eval(PodPerContainer, 0, limits, -1)
	// (b) One pod-level limit over all of them.
	none := make([]int64, len(limits))
	podHi := int64(0)
	for i := range limits {
		podHi += r.hiMilli(i)
	}
	podM := r.search(podHi, func(m int64) bool { return r.eval(PodLevel, m, none, -1).Met })
	podL := r.eval(PodLevel, podM, none, -1)
	// (c) The per-container limits inside a pod limit: container limits
	// only take runtime away, so no pod limit under (b)'s meets the target,
	// and one at their sum is (a) itself.
	bothM := perC.CostMilli
	if podL.Met && perC.Met {
		bothM = r.searchFrom(podM, perC.CostMilli, func(m int64) bool { return r.eval(PodBoth, m, limits, -1).Met })
	}
	both := r.eval(PodBoth, bothM, limits, -1)
	if r.err != nil {
		return nil, r.err
	}
	a.Options = []PodOption{perC, podL, both}
	a.choose()
	for i, d := range pd.Demands {
		if len(d.Warnings) > 0 {
			a.Warnings = append(a.Warnings, fmt.Sprintf("%s: %s", pd.Names[i], d.Warnings[0]))
		}
	}
	return a, nil
}

// newPodRun is the replay of pd at req's period (100 ms by default) and
// phases (DefaultPodPhases), each container's demand checked against the
// period.
func newPodRun(pd PodDemand, req PodRequest) (*podRun, error) {
	if req.Period <= 0 {
		req.Period = 100 * time.Millisecond
	}
	if req.Phases <= 0 {
		req.Phases = DefaultPodPhases
	}
	r := &podRun{pd: pd, period: req.Period, phases: req.Phases, target: req.Target.WithDefaults()}
	for _, d := range pd.Demands {
		if err := d.Check(req.Period); err != nil {
			return nil, err
		}
		r.cores = append(r.cores, d.Bound())
	}
	return r, nil
}

// EvaluatePod replays pd through one setting: a pod-level limit of
// podMilli (0: none) over the containers' own limits (limitsMilli, one per
// container, 0: none), nested as the kernel nests them, at req's period and
// phases, as AdvisePod replays each of its candidates. Met says whether the
// setting meets req's target.
func EvaluatePod(pd PodDemand, req PodRequest, podMilli int64, limitsMilli []int64) (PodOption, error) {
	if len(pd.Demands) == 0 || len(pd.Names) != len(pd.Demands) || len(limitsMilli) != len(pd.Demands) {
		return PodOption{}, fmt.Errorf("%d names and %d limits for %d containers", len(pd.Names), len(limitsMilli), len(pd.Demands))
	}
	r, err := newPodRun(pd, req)
	if err != nil {
		return PodOption{}, err
	}
	setting := PodLevel
	for _, l := range limitsMilli {
		if l > 0 {
			setting = PodBoth
		}
	}
	o := r.eval(setting, podMilli, limitsMilli, -1)
	return o, r.err
}

// choose sets Cheapest, SavedMilli and Against.
func (a *PodAdvice) choose() {
	best := -1
	for _, i := range []int{1, 2, 0} { // on a tie: pod-level, both, per-container
		o := a.Options[i]
		if o.Met && (best < 0 || o.CostMilli < a.Options[best].CostMilli) {
			best = i
		}
	}
	if best < 0 {
		return
	}
	a.Cheapest = a.Options[best].Setting
	other := 0 // per-container, or pod-level when per-container is the cheapest
	if best == 0 {
		other = 1
	}
	if o := a.Options[other]; o.Met {
		a.SavedMilli, a.Against = o.CostMilli-a.Options[best].CostMilli, o.Setting
	}
}

// hiMilli is the limit at which container i is never throttled: its
// parallelism bound, whole.
func (r *podRun) hiMilli(i int) int64 { return int64(math.Ceil(r.cores[i])) * 1000 }

// search returns the smallest limit in 10m steps up to hi for which meets
// holds (hi when none does): throttling falls as the limit rises.
func (r *podRun) search(hi int64, meets func(int64) bool) int64 {
	return r.searchFrom(10, hi, meets)
}

// searchFrom is search over lo to hi.
func (r *podRun) searchFrom(lo, hi int64, meets func(int64) bool) int64 {
	lo, hi = lo/10, (hi+9)/10 // in 10m steps
	if lo < 1 {
		lo = 1
	}
	if lo >= hi || meets(lo*10) {
		return min(lo, hi) * 10
	}
	for hi-lo > 1 { // meets(lo) is false; meets(hi) true or hi the last
		m := (lo + hi) / 2
		if meets(m * 10) {
			hi = m
		} else {
			lo = m
		}
	}
	return hi * 10
}

// eval replays the pod at pod (millicores, 0: none) over the containers'
// limits (0: none) at every phase. only, if not -1, replays that
// container alone (without a pod quota the others do not touch it).
func (r *podRun) eval(setting string, pod int64, limits []int64, only int) PodOption {
	idx := make([]int, 0, len(limits))
	for i := range limits {
		if only < 0 || i == only {
			idx = append(idx, i)
		}
	}
	ds := make([]*Demand, len(idx))
	s := cfs.NestedSetting{Period: r.period, Pod: r.quota(pod), Quotas: make([]time.Duration, len(idx)), Cores: make([]float64, len(idx))}
	hists := make([]*cfs.DelayHist, len(idx))
	for k, i := range idx {
		ds[k], s.Quotas[k], s.Cores[k], hists[k] = r.pd.Demands[i], r.quota(limits[i]), r.cores[i], new(cfs.DelayHist)
	}
	o := PodOption{Setting: setting, PodLimitMilli: pod, Containers: make([]ContainerOutcome, len(idx))}
	var podP, podT uint64
	own := make([][2]uint64, len(idx))
	// The kernel starts each group's period timer on its own: container
	// k's grid runs k+1 phases after the pod's, so that every pool sees
	// every phase and the pools' refills fall apart.
	s.Phases = make([]time.Duration, len(idx))
	for ph := range r.phases {
		s.Phase = time.Duration(ph) * r.period / time.Duration(r.phases)
		for k := range idx {
			s.Phases[k] = time.Duration((ph+k+1)%r.phases) * r.period / time.Duration(r.phases)
		}
		res, err := cfs.ReplayNested(ds, s, hists)
		if err != nil {
			r.err = cmp.Or(r.err, err)
			return o
		}
		podP, podT = podP+res.Pod.Stat.Periods, podT+res.Pod.Stat.ThrottledPeriods
		o.PodThrottledSeconds += res.Pod.ThrottledNs / 1e9 / float64(r.phases)
		for k, c := range res.Containers {
			own[k][0] += c.Stat.Periods
			own[k][1] += c.Stat.ThrottledPeriods
			o.Containers[k].ThrottledSeconds += c.ThrottledNs / 1e9 / float64(r.phases)
			o.Containers[k].PodThrottledSeconds += res.PodThrottledNs[k] / 1e9 / float64(r.phases)
		}
	}
	o.PodThrottledRatio = podRatio(podT, podP)
	o.Met = o.PodThrottledRatio <= r.target.MaxThrottled
	var sum int64
	for k, i := range idx {
		c := &o.Containers[k]
		c.Name, c.LimitMilli, c.MeanCores = r.pd.Names[i], limits[i], ds[k].MeanCores()
		c.ThrottledRatio = podRatio(own[k][1], own[k][0])
		h := hists[k]
		c.DelayP50Ms, c.DelayP99Ms, c.DelayMaxMs = h.Quantile(0.5)/1e6, h.Quantile(0.99)/1e6, h.Max()/1e6
		if c.ThrottledRatio > r.target.MaxThrottled || (r.target.MaxDelay > 0 && c.DelayP99Ms > r.target.MaxDelayMs) {
			o.Met = false
		}
		if limits[i] <= 0 {
			sum = math.MaxInt64 / 2 // no limit: the container may use any CPU
		} else if sum < math.MaxInt64/2 {
			sum += limits[i]
		}
	}
	o.CostMilli = sum
	if pod > 0 {
		o.CostMilli = min(pod, sum)
	}
	return o
}

func podRatio(n, of uint64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// quota is the quota of m millicores per period (0: none).
func (r *podRun) quota(m int64) time.Duration {
	return time.Duration(m) * r.period / 1000
}

func (r *podRun) sampled() PodSampled {
	d0 := r.pd.Demands[0]
	s := PodSampled{Source: r.pd.Source, Containers: r.pd.Names, DurationSeconds: d0.Duration().Seconds(), Samples: len(d0.At),
		Phases: r.phases, PeriodUsec: r.period.Microseconds()}
	for i := 1; i < len(d0.At); i++ {
		dt := d0.At[i] - d0.At[i-1]
		if dt < 5*time.Millisecond {
			continue
		}
		var du time.Duration
		for _, d := range r.pd.Demands {
			du += d.UsageAt(i) - d.UsageAt(i-1)
		}
		s.MaxCores10ms = max(s.MaxCores10ms, float64(du)/float64(dt))
	}
	for _, d := range r.pd.Demands {
		s.MeanCores += d.MeanCores()
	}
	return s
}
