package validation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/demand"
)

// Program is a program nobody here wrote, driven by its own standard
// client at a steady rate: it is sampled without a limit, advised, then
// measured at three limits near the knee.
type Program struct {
	Name, What string
	// Setup prepares dir (configuration, data) before the server starts.
	Setup func(ctx context.Context, dir string) error
	// Server is the server's command line (run inside the group).
	Server func(dir string) []string
	// Addr is where the server listens once ready.
	Addr string
	// Prime runs once the server is ready (e.g. a benchmark's tables).
	Prime func(ctx context.Context, dir string) error
	// Client is the load for d (run outside the group).
	Client func(dir string, d time.Duration) []string
}

// ProgramRow is one limit of one round of a program.
type ProgramRow struct {
	Program, What string
	Round         int
	// WindowSeconds is how long each window was sampled or measured.
	WindowSeconds float64
	Limit         string
	LimitMilli    int64
	// Recommended marks the limit advise recommended in this round.
	Recommended bool
	// Knee is the throttled share the limit was picked for (0.5, 0.2,
	// 0.05: the limit on a 10m ladder whose prediction lies nearest); 0 for
	// the recommended limit measured on its own.
	Knee float64 `json:",omitempty"`
	// CPUs is how many CPUs the group ran on while sampled (per-CPU
	// counters; 0: unknown).
	CPUs int `json:",omitempty"`
	// From the unlimited window: mean use, the advice's interval.
	SampledMean                            float64
	Predicted, PredictedLow, PredictedHigh float64
	SliceBound                             float64 `json:",omitempty"`
	Stationary                             bool
	// Measured under the limit: throttled share, periods, the group's mean
	// use.
	Measured     float64
	Periods      uint64
	MeasuredMean float64
	InInterval   bool
	// WarmupSeconds is how long the load ran before the sampling,
	// SettleSeconds how long under each limit before it was measured (the
	// load ran without a pause through the round; both 0 in rows from
	// before 2026-11-27 09:10, which started a client for each window
	// after 5 s of load).
	WarmupSeconds float64 `json:",omitempty"`
	SettleSeconds float64 `json:",omitempty"`
	// Repeat numbers the consecutive windows one limit was measured in
	// (ProgramRun.Repeats), from 1; 0 in rows from before it existed (one
	// window per limit).
	Repeat int `json:",omitempty"`
	// Others is the cores the rest of the machine used while measured (nil:
	// unknown).
	Others *float64 `json:",omitempty"`
	// KneeRange is the advice's knee at Knee's share (advise.Advice.Knee:
	// from the lowest limit whose interval's low end is at most the share
	// to the lowest whose high end is); nil for the recommended limit or
	// where the advice gives none.
	KneeRange *advise.KneeRange `json:",omitempty"`
}

// KneeWidthPercent is the knee's limit range in percent of the limit
// measured (NaN without a range or without its upper end).
func (r ProgramRow) KneeWidthPercent() float64 {
	k := r.KneeRange
	if k == nil || k.NoUpperEnd || k.LowMilli <= 0 || r.LimitMilli <= 0 {
		return math.NaN()
	}
	return 100 * float64(k.HighMilli-k.LowMilli) / float64(r.LimitMilli)
}

// RangeHolds reports whether the kernel's count at the limit lies on the
// side of the knee's limit range it should: a share measured at or under
// the knee's share puts the kernel's crossing at or below the limit, so
// the limit must be at least the range's optimistic end; a share above it
// puts the crossing above the limit, so the limit must lie under the
// pessimistic end (or the range has none). ok is false without a range.
func (r ProgramRow) RangeHolds() (holds, ok bool) {
	k := r.KneeRange
	if k == nil || r.Knee <= 0 {
		return false, false
	}
	if r.Measured <= r.Knee {
		return k.LowMilli > 0 && r.LimitMilli >= k.LowMilli, true
	}
	return k.NoUpperEnd || r.LimitMilli < k.HighMilli, true
}

// kneeAt is a's knee at share (nil: none).
func kneeAt(a *advise.Advice, share float64) *advise.KneeRange {
	for _, k := range a.Knee {
		if k.Share == share {
			return &k
		}
	}
	return nil
}

// ProgramRun is how a program is sampled and measured.
type ProgramRun struct {
	// Window is how long it is sampled without a limit, Measure how long
	// each limit is measured.
	Window, Measure time.Duration
	// Warmup is how long the load runs before the sampling starts, Settle
	// how long after each limit is set before it is measured.
	Warmup, Settle time.Duration
	Rounds         int
	// Repeats is how many consecutive windows of Measure each limit is
	// measured in, without a pause (at least 1): how far the kernel's own
	// count moves under one limit and a steady load, the floor under any
	// interval's width.
	Repeats int
}

// repeats is run.Repeats, at least 1.
func (run ProgramRun) repeats() int { return max(run.Repeats, 1) }

// MeasureProgram starts p in a group of its own (root, cgroup v1 or v2)
// and for each round: starts its client once, for the whole round (the
// load never pauses, as a service's traffic does not while its limit is
// changed), lets it run for Warmup, samples the group without a limit for
// Window (saved as sampled-N.csv in dir, with its per-CPU split), advises,
// and measures for Measure each the limits where advise predicts about
// 50%, 20% and 5% of periods throttled (KneeLimits) and the recommended
// one, each after Settle under it, in Repeats consecutive windows. It stops
// everything it started.
func MeasureProgram(ctx context.Context, p Program, dir string, run ProgramRun, log io.Writer) (rows []ProgramRow, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if p.Setup != nil {
		if err := p.Setup(ctx, dir); err != nil {
			return nil, fmt.Errorf("%s setup: %w", p.Name, err)
		}
	}
	m, err := cgroup.NewManager("/", "validate-"+p.Name, false)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, m.Cleanup(true)) }()
	g, err := m.NewGroup("server", cgroup.Settings{})
	if err != nil {
		return nil, err
	}
	stop, err := startIn(g, p.Server(dir), filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	defer func() {
		stop()
		// Servers that fork (postgres under runuser) may still be shutting
		// down: give them 10 s before Cleanup kills what is left.
		for end := time.Now().Add(10 * time.Second); len(g.Procs()) > 0 && time.Now().Before(end); {
			time.Sleep(100 * time.Millisecond)
		}
	}()
	if err := waitPort(ctx, p.Addr, 30*time.Second); err != nil {
		return nil, fmt.Errorf("%s: %w (see %s)", p.Name, err, filepath.Join(dir, "server.log"))
	}
	if p.Prime != nil {
		if err := p.Prime(ctx, dir); err != nil {
			return nil, fmt.Errorf("%s prime: %w", p.Name, err)
		}
	}
	path := g.Dirs["cpu"]
	lg, err := demand.FindPath("/", path)
	if err != nil {
		return nil, err
	}
	setLimit := func(milli int64) error {
		s := cgroup.Settings{PeriodUsec: uint64(Period / time.Microsecond)}
		if milli > 0 {
			s.QuotaUsec = int64(cgroup.MilliCPUToQuota(milli, s.PeriodUsec))
		}
		for _, w := range s.Writes(m.Version(), false) {
			if err := os.WriteFile(filepath.Join(g.Dirs[w.Controller], w.File), []byte(w.Value), 0o644); err != nil {
				return fmt.Errorf("setting %s: %w", w.File, err)
			}
		}
		return nil
	}
	for round := 1; round <= run.Rounds; round++ {
		if err := setLimit(0); err != nil {
			return rows, err
		}
		// One client for the round: the warm-up, the sampling and every
		// limit KneeLimits gives (one per knee share and the recommended
		// one), each settled and measured Repeats times, with a minute to
		// spare; it is stopped when the round ends.
		limits := time.Duration(len(advise.KneeShares()) + 1)
		each := run.Settle + time.Duration(run.repeats())*run.Measure
		l, err := startLoad(ctx, p.Client(dir, run.Warmup+run.Window+limits*each+time.Minute))
		if err != nil {
			return rows, fmt.Errorf("%s round %d: %w", p.Name, round, err)
		}
		rg := rig{p: p, dir: dir, run: run, lg: lg, g: g, setLimit: setLimit, log: log}
		rs, err := rg.round(ctx, round, l)
		rows = append(rows, rs...)
		l.stop()
		if err != nil {
			return rows, err
		}
	}
	return rows, setLimit(0)
}

// rig is what MeasureProgram's rounds share: the program, its group (as
// sampled and as set), how it is run, and where the log goes.
type rig struct {
	p        Program
	dir      string
	run      ProgramRun
	lg       *demand.Group
	g        *cgroup.Group
	setLimit func(milli int64) error
	log      io.Writer
}

// round is one round of MeasureProgram under the running load l.
func (rg rig) round(ctx context.Context, round int, l *load) (rows []ProgramRow, err error) {
	p, run := rg.p, rg.run
	if err := l.wait(ctx, run.Warmup); err != nil {
		return nil, fmt.Errorf("%s warm-up: %w", p.Name, err)
	}
	d, _, err := demand.Sample(ctx, rg.lg, run.Window, nil)
	if err == nil {
		err = l.running()
	}
	if err != nil {
		return nil, fmt.Errorf("%s round %d sampling: %w", p.Name, round, err)
	}
	a, err := advise.Advise(d, advise.Request{GridSize: 25}, advise.Sampled{Source: p.Name})
	if err != nil {
		return rows, err
	}
	fmt.Fprintf(rg.log, "%s round %d: %s (ran on %d CPUs)\n%s\n", p.Name, round, advise.Answer(a), a.Sampled.CPUs, advise.KneeText(a))
	if f, err := os.Create(filepath.Join(rg.dir, fmt.Sprintf("sampled-%d.csv", round))); err == nil {
		demand.WriteCSV(f, d)
		f.Close()
	}
	knees, err := KneeLimits(d, a)
	if err != nil {
		return rows, err
	}
	for _, k := range knees {
		e := k.Evaluation
		if err := rg.setLimit(e.LimitMilli); err != nil {
			return rows, err
		}
		if err := l.wait(ctx, run.Settle); err != nil {
			return rows, fmt.Errorf("%s at %dm: %w", p.Name, e.LimitMilli, err)
		}
		for rep := 1; rep <= run.repeats(); rep++ {
			r, err := rg.measure(ctx, l, a, d, k, round, rep)
			if err != nil {
				return rows, err
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// measure measures the limit of knee k, already set and settled, for one
// window of Measure (the rep-th in a row) under the running load l.
func (rg rig) measure(ctx context.Context, l *load, a *advise.Advice, d *advise.Demand, k Knee, round, rep int) (ProgramRow, error) {
	p, run, g, e := rg.p, rg.run, rg.g, k.Evaluation
	before, err := g.Stat()
	if err != nil {
		return ProgramRow{}, err
	}
	u0, _ := g.Usage()
	mark0, ierr := cgroup.MarkHost("/")
	mark0.Ours = u0
	t0 := time.Now()
	if err := l.wait(ctx, run.Measure); err != nil {
		return ProgramRow{}, fmt.Errorf("%s at %dm: %w", p.Name, e.LimitMilli, err)
	}
	span := time.Since(t0)
	u1, _ := g.Usage()
	mark1, ierr2 := cgroup.MarkHost("/")
	mark1.Ours = u1
	after, err := g.Stat()
	if err != nil {
		return ProgramRow{}, err
	}
	st := after.Sub(before)
	r := ProgramRow{Program: p.Name, What: p.What, Round: round, WindowSeconds: run.Window.Seconds(), Limit: advise.Point{LimitMilli: e.LimitMilli, Period: Period}.String(), LimitMilli: e.LimitMilli,
		Recommended: e.LimitMilli == a.Recommendation.LimitMilli && a.Recommendation.Met, Knee: k.Knee, CPUs: a.Sampled.CPUs,
		SampledMean: d.MeanCores(), Predicted: e.ThrottledRatio, PredictedLow: e.ThrottledRatioRange[0], PredictedHigh: e.ThrottledRatioRange[1],
		Stationary: a.Window.Stationary, Periods: st.Periods, MeasuredMean: (u1 - u0).Seconds() / span.Seconds(),
		WarmupSeconds: run.Warmup.Seconds(), SettleSeconds: run.Settle.Seconds()}
	if run.Repeats > 1 {
		r.Repeat = rep
	}
	if e.ThrottledRatioSliceBound != nil {
		r.SliceBound = *e.ThrottledRatioSliceBound
	}
	if k.Knee > 0 {
		r.KneeRange = kneeAt(a, k.Knee)
	}
	if st.Periods > 0 {
		r.Measured = float64(st.ThrottledPeriods) / float64(st.Periods)
	}
	r.InInterval = Within(r.Measured, r.PredictedLow, r.PredictedHigh)
	if o, ok := cgroup.OtherCores(mark0, mark1); ok && ierr == nil && ierr2 == nil {
		r.Others = &o
	}
	fmt.Fprintf(rg.log, "  %s%s: predicted %.3f [%.3f, %.3f], measured %.3f (%d periods, %.3f cores; others %s)\n",
		r.Limit, r.repeatText(), r.Predicted, r.PredictedLow, r.PredictedHigh, r.Measured, r.Periods, r.MeasuredMean, fmtOthers(r.Others))
	return r, nil
}

func fmtOthers(o *float64) string {
	if o == nil {
		return "?"
	}
	return fmt.Sprintf("%.2f cores", *o)
}

// Knee is a limit picked for the share of periods advise predicts it
// throttles (0 for the recommended limit).
type Knee struct {
	Knee float64
	advise.Evaluation
}

// KneeLimits evaluates d (with advise's intervals) on advise.KneeLadder up
// to the CPUs it used, and returns for each of advise.KneeShares the limit
// whose prediction lies nearest (advise.Nearest), then a's recommended
// limit (when it met its target and is not one of them).
func KneeLimits(d *advise.Demand, a *advise.Advice) ([]Knee, error) {
	evs, err := advise.EvaluateIntervals(d, advise.KneeLadder(d, int64(a.Sampled.Cores)*1000, Period), advise.Options{})
	if err != nil {
		return nil, err
	}
	var out []Knee
	seen := map[int64]bool{}
	for _, share := range advise.KneeShares() {
		best := evs[advise.Nearest(evs, share)]
		if !seen[best.LimitMilli] {
			seen[best.LimitMilli] = true
			out = append(out, Knee{share, best})
		}
	}
	if r := a.Recommendation; r.Met && !seen[r.LimitMilli] && r.ThrottledRatioRange != nil {
		out = append(out, Knee{0, r.Evaluation})
	}
	return out, nil
}

// startIn starts argv with its stdout and stderr in logPath, inside g
// before it runs anything: a shell waits on its stdin until it is in the
// group, then execs argv. stop ends its process group and waits.
func startIn(g *cgroup.Group, argv []string, logPath string) (stop func(), err error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("sh", append([]string{"-c", `read _ && exec "$@"`, "sh"}, argv...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop = func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		logf.Close()
	}
	if err := g.Attach(cmd.Process.Pid); err != nil {
		in.Close()
		stop()
		return nil, err
	}
	io.WriteString(in, "go\n")
	in.Close()
	return stop, nil
}

// load is a client running in the background until stopped.
type load struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	errb   strings.Builder
}

// startLoad starts argv (a load client) in the background.
func startLoad(ctx context.Context, argv []string) (*load, error) {
	lctx, cancel := context.WithCancel(ctx)
	l := &load{cancel: cancel, done: make(chan struct{})}
	cmd := exec.CommandContext(lctx, argv[0], argv[1:]...)
	cmd.Stderr = &l.errb
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("%s: %w", argv[0], err)
	}
	go func() {
		l.err = fmt.Errorf("%s ended before the round did (%v): %s", argv[0], cmd.Wait(), strings.TrimSpace(l.errb.String()))
		close(l.done)
	}()
	return l, nil
}

// running is nil while the client runs, and why it ended once it has.
func (l *load) running() error {
	select {
	case <-l.done:
		return l.err
	default:
		return nil
	}
}

// wait waits d under the load: an error if the client ends or ctx is done
// meanwhile.
func (l *load) wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return l.running()
	case <-l.done:
		return l.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop ends the client and waits for it.
func (l *load) stop() {
	l.cancel()
	<-l.done
}

// runClient runs a load client to its end.
func runClient(ctx context.Context, argv []string, out io.Writer) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var errb strings.Builder
	cmd.Stdout, cmd.Stderr = out, &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", argv[0], err, strings.TrimSpace(errb.String()))
	}
	return nil
}

// waitPort waits until addr accepts a connection.
func waitPort(ctx context.Context, addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listening after %s: %w", addr, limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
