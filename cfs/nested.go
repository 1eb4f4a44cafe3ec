package cfs

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// The nested replay is the one-quota replay (Periods.Replay) for a pod: each
// container's quota inside the pod's, as the kernel nests them (a pod-level
// limit, Kubernetes 1.34+, is a quota on the pod's own cgroup over its
// containers' groups). Every container has its own pool (none without a
// limit of its own) and the pod has one shared pool; a container's work is
// served only while both its pool and the pod's have runtime left, and takes
// from both. It keeps the replay's conventions: work arrives at a constant
// rate within a sample, waiting work catches up on the container's Cores
// CPUs in arrival order, a sample above Cores is a late reading, the
// pools refill at the ticks of one period grid (the kubelet gives a pod and
// its containers the same period), burst off and slices not modelled (the
// pools are shared perfectly). Each pool counts its own cpu.stat: a
// container's throttled periods are those in which its own pool ran dry
// (the kernel counts throttling on the group whose quota ran out), the pod's
// those in which the pod's did; a container's delays count all its work
// waited, for either pool.

// NestedSetting is a pod's quotas: the pod's and each container's, on one
// period and phase.
type NestedSetting struct {
	// Period is every pool's period (the kubelet gives a pod and its
	// containers the same), Phase the pod's grid's phase (Cut's).
	Period, Phase time.Duration
	// Phases, if not nil, is each container's own grid's phase: the
	// kernel starts each group's period timer on its own, so the grids
	// of a pod and its containers are apart by whatever their first use
	// made them. nil: every grid at Phase.
	Phases []time.Duration
	// Pod is the pod-level quota per period; 0: none.
	Pod time.Duration
	// Quotas is each container's own quota per period; 0: none.
	Quotas []time.Duration
	// Cores is how many CPUs each container's waiting work catches up on
	// (Demand.Bound).
	Cores []float64
}

// NestedResult is what one nested replay counted.
type NestedResult struct {
	// Pod is the pod's pool's count: its Stat, the throttled time of the
	// containers' CPUs while the pod's pool was dry, and (with hists) every
	// container's delays together.
	Pod Result
	// Containers is each container's: its own pool's Stat and throttled
	// time (zero without a limit), and its work's delays, whichever pool
	// held it.
	Containers []Result
	// PodThrottledNs is, per container, the time its CPUs waited for the
	// pod's pool (with its own pool not dry): the wait a container owes to
	// its neighbours' use of the shared quota.
	PodThrottledNs []float64
}

// nestedBox is one container's state in the nested replay.
type nestedBox struct {
	d        *Demand
	cores    float64
	bw       Bandwidth // Limited() false: no quota of its own
	backlog  float64
	arrived  float64 // cumulative
	queue    []arrival
	hist     *DelayHist
	res      Result
	podWait  float64
	late     float64
	r        float64 // arrival rate in the current piece (cores)
	s        float64 // service rate in the current step
	ownDry   bool
	podBlock bool
	grid     *grid // its pool's period grid
}

// grid is one pool's period ticks: tick j at start + j*period, n of them
// after start (Cut's: the last ends the period that holds the end), next
// the next one due.
type grid struct {
	start, period time.Duration
	n, next       int
}

func newGrid(phase, period, end time.Duration) *grid {
	start := phase - period // the first period holds time 0
	if phase == 0 {
		start = 0
	}
	return &grid{start: start, period: period, n: int((end-start)/period) + 1, next: 1}
}

// at is the time of the next tick; past the last, never.
func (g *grid) at() time.Duration {
	if g.next > g.n {
		return time.Duration(1<<63 - 1)
	}
	return g.start + time.Duration(g.next)*g.period
}

// arrival is work that arrived from t0 to t1 (ns), cumulative a0 to a1, not
// served yet.
type arrival struct{ t0, t1, a0, a1 float64 }

// ReplayNested replays the containers' demand ds (on one time axis: the
// same At, as AlignDemands gives them) through the pod's quotas s. hists,
// if not nil, holds one histogram per container for its work's delays
// (and then the pod's Result.Hist, a new histogram, merges them).
func ReplayNested(ds []*Demand, s NestedSetting, hists []*DelayHist) (NestedResult, error) {
	if err := checkNested(ds, s, hists); err != nil {
		return NestedResult{}, err
	}
	at := ds[0].At
	boxes := make([]*nestedBox, len(ds))
	for i, d := range ds {
		b := &nestedBox{d: d, cores: s.Cores[i]}
		if s.Quotas[i] > 0 {
			b.bw = NewBandwidth(s.Quotas[i], s.Period, 0)
		}
		if hists != nil {
			b.hist = hists[i]
		}
		boxes[i] = b
	}
	var pod Bandwidth
	if s.Pod > 0 {
		pod = NewBandwidth(s.Pod, s.Period, 0)
	}
	var podThrottled float64
	// One period grid per pool: the pod's at Phase, each container's at
	// its own (Phases, else Phase); a container's late readings are cut at
	// its own grid's ticks, whether it has a quota or not.
	end := at[len(at)-1]
	podGrid := newGrid(s.Phase, s.Period, end)
	for i, x := range boxes {
		ph := s.Phase
		if s.Phases != nil {
			ph = s.Phases[i]
		}
		x.grid = newGrid(ph, s.Period, end)
	}
	// tick refills the pools whose tick is at t (the containers' before
	// the pod's, the pod's throttled state taken before either).
	tick := func(t time.Duration) {
		podDry := pod.Limited() && pod.Pool <= Eps
		podWaiting, podTick := false, podGrid.at() == t
		for _, x := range boxes {
			ownDry := x.bw.Limited() && x.bw.Pool <= Eps
			if x.backlog > Eps && !ownDry {
				podWaiting = true
			}
			if x.grid.at() != t {
				continue
			}
			if x.bw.Limited() && x.bw.Running() {
				x.bw.Refill(ownDry && x.backlog > Eps)
			}
			x.late = 0
			x.grid.next++
		}
		if podTick {
			if pod.Limited() && pod.Running() {
				pod.Refill(podDry && podWaiting)
			}
			podGrid.next++
		}
	}
	nextTick := func() time.Duration {
		t := podGrid.at()
		for _, x := range boxes {
			t = min(t, x.grid.at())
		}
		return t
	}
	for i := 1; i < len(at); i++ {
		a, bEnd := at[i-1], at[i]
		for a < bEnd {
			tick1 := nextTick()
			if tick1 <= a {
				tick(tick1)
				continue
			}
			b := min(bEnd, tick1)
			l := float64(b - a)
			for _, x := range boxes {
				r := float64(x.d.du(i)) / float64(bEnd-at[i-1])
				if !x.d.Arrivals && x.cores > 0 {
					r, x.late = lateReading(r, x.late, l, x.cores, b == x.grid.at() || i == len(at)-1)
				}
				x.r = r
			}
			podThrottled += stepPiece(boxes, &pod, float64(a), float64(b))
			a = b
			if a == tick1 {
				tick(tick1)
			}
		}
	}
	// The ticks that end the last periods, each pool's up to its own.
	for t := nextTick(); ; t = nextTick() {
		done := podGrid.next > podGrid.n
		for _, x := range boxes {
			done = done && x.grid.next > x.grid.n
		}
		if done {
			break
		}
		tick(t)
	}
	out := NestedResult{Pod: Result{Stat: pod.Stat, ThrottledNs: podThrottled}, Containers: make([]Result, len(boxes)), PodThrottledNs: make([]float64, len(boxes))}
	if hists != nil {
		out.Pod.Hist = new(DelayHist)
	}
	fend := float64(end)
	for i, x := range boxes {
		for _, q := range x.queue { // hist set; still waiting at the end: waited at least until then
			x.hist.Add(max(fend-(q.t0+q.t1)/2, 0), q.a1-q.a0)
		}
		x.res.Stat = x.bw.Stat
		x.res.Hist = x.hist
		out.Containers[i] = x.res
		out.PodThrottledNs[i] = x.podWait
		if out.Pod.Hist != nil {
			out.Pod.Hist.Merge(x.hist)
		}
	}
	return out, nil
}

// stepPiece runs one piece of a sample (from t to tb, inside one period,
// each container arriving at its rate r) through the pools, event by event:
// a step ends where a pool runs dry or a backlog empties. It returns the
// throttled time the pod's pool caused.
func stepPiece(boxes []*nestedBox, pod *Bandwidth, t, tb float64) float64 {
	podThrottled := 0.0
	for t < tb {
		podDry := pod.Limited() && pod.Pool <= Eps
		dt, total := tb-t, 0.0
		for _, x := range boxes {
			x.ownDry = x.bw.Limited() && x.bw.Pool <= Eps
			x.podBlock = !x.ownDry && podDry
			switch {
			case x.ownDry || x.podBlock:
				x.s = 0
			case x.backlog > Eps || (x.d.Arrivals && x.r > x.cores):
				x.s = max(x.cores, x.r)
				if x.d.Arrivals {
					x.s = x.cores
				}
				if x.s > x.r {
					dt = min(dt, x.backlog/(x.s-x.r))
				}
			default:
				x.s = x.r
			}
			if x.s > 0 && x.bw.Limited() {
				dt = min(dt, x.bw.Pool/x.s)
			}
			total += x.s
		}
		if total > 0 && pod.Limited() {
			dt = min(dt, pod.Pool/total)
		}
		if t+dt <= t { // a step below float resolution: end the piece
			dt = tb - t
		}
		for _, x := range boxes {
			arrive, serve := x.r*dt, x.s*dt
			if serve > 0 && x.bw.Limited() {
				x.bw.Start()
				x.bw.Take(serve)
			}
			if x.s == 0 && x.backlog+arrive > Eps {
				w := dt * min(x.cores, max(1, math.Ceil(x.r-1e-9)))
				if x.ownDry {
					x.res.ThrottledNs += w
				} else {
					x.podWait += w
					podThrottled += w
				}
			}
			x.flow(t, dt, arrive, serve)
		}
		if total > 0 && pod.Limited() {
			pod.Start()
			pod.Take(total * dt)
		}
		t += dt
	}
	return podThrottled
}

// flow moves one container's work over a step from t, dt long: arrive ns
// arrived, serve ns served from the oldest waiting first. Work served as
// it arrives, with nothing waiting, waited nothing; the rest waits in the
// queue, and each part served adds the delay of its middle.
func (x *nestedBox) flow(t, dt, arrive, serve float64) {
	if x.backlog <= Eps && serve >= arrive-Eps && serve <= arrive+Eps {
		x.arrived += arrive
		x.backlog = 0
		if x.hist != nil {
			x.hist.Add(0, arrive)
		}
		return
	}
	if arrive > 0 {
		if x.hist != nil {
			x.queue = append(x.queue, arrival{t, t + dt, x.arrived, x.arrived + arrive})
		}
		x.arrived += arrive
	}
	x.backlog += arrive - serve
	if x.backlog <= Eps { // caught up: what waits is served exactly
		serve += x.backlog
		x.backlog = 0
	}
	if x.hist == nil || serve <= 0 {
		return
	}
	s0 := x.arrived - x.backlog - serve // cumulative served before the step
	rate := serve / dt
	n := 0
	for n < len(x.queue) {
		q := &x.queue[n]
		lo, hi := max(q.a0, s0), min(q.a1, s0+serve)
		if hi <= lo {
			if q.a1 <= s0+serve {
				n++
				continue
			}
			break
		}
		mid := (lo + hi) / 2
		arrT := q.t0 + (mid-q.a0)/(q.a1-q.a0)*(q.t1-q.t0)
		x.hist.Add(max(t+(mid-s0)/rate-arrT, 0), hi-lo)
		if hi >= q.a1-Eps*1e-3 {
			n++
			continue
		}
		// Served in part: the rest waits on.
		q.t0 += (hi - q.a0) / (q.a1 - q.a0) * (q.t1 - q.t0)
		q.a0 = hi
		break
	}
	x.queue = x.queue[:copy(x.queue, x.queue[n:])]
	if x.backlog == 0 {
		x.queue = x.queue[:0]
	}
}

// checkNested refuses a pod the nested replay cannot run.
func checkNested(ds []*Demand, s NestedSetting, hists []*DelayHist) error {
	if len(ds) == 0 {
		return errors.New("no container to replay")
	}
	if len(s.Quotas) != len(ds) || len(s.Cores) != len(ds) || (hists != nil && len(hists) != len(ds)) || (s.Phases != nil && len(s.Phases) != len(ds)) {
		return fmt.Errorf("%d containers but %d quotas, %d cores bounds, %d histograms and %d phases: give one of each per container", len(ds), len(s.Quotas), len(s.Cores), len(hists), len(s.Phases))
	}
	if s.Period <= 0 {
		return fmt.Errorf("period %s: give a positive period", s.Period)
	}
	for _, ph := range append([]time.Duration{s.Phase}, s.Phases...) {
		if ph < 0 || ph >= s.Period {
			return fmt.Errorf("phase %s: give a phase from 0 to under the period %s", ph, s.Period)
		}
	}
	for i, d := range ds {
		if len(d.At) != len(ds[0].At) || len(d.At) < 2 {
			return fmt.Errorf("container %d: %d samples, the first container %d: align the containers' samples on one time axis (AlignDemands)", i+1, len(d.At), len(ds[0].At))
		}
		for k, t := range d.At {
			if t != ds[0].At[k] {
				return fmt.Errorf("container %d: sample %d at %s, the first container's at %s: align the containers' samples on one time axis (AlignDemands)", i+1, k+1, t, ds[0].At[k])
			}
		}
		if s.Cores[i] <= 0 {
			return fmt.Errorf("container %d: cores bound %g: give a positive bound (Demand.Bound)", i+1, s.Cores[i])
		}
	}
	return nil
}
