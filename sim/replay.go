package sim

import (
	"errors"
	"fmt"
	"io"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
)

// ErrSimulated is ReplayOf's error for a results directory that a
// simulation wrote: there is no measurement to replay.
var ErrSimulated = errors.New("these results are simulated already: give a directory written by throttlelab run")

// Replay is what simulating a measured results directory takes: its
// experiment and runs, the machine it ran on, that machine's speed that day
// (MeasuredCosts), the seeds its repeats recorded (the same arrivals and
// picks), and where its load generator ran.
type Replay struct {
	Dir        string
	Experiment *experiment.Experiment
	Env        record.Env
	Measured   []*record.Run
	Costs      Costs
	Seeds      map[int]uint64
	// LoadGenInRoot: the results are from before the load generator had a
	// group of its own (Options.LoadGenInRoot).
	LoadGenInRoot bool
}

// ReplayOf reads the measured results directory dir; base are the costs
// the measurement does not tell (DefaultCosts, or the caller's).
func ReplayOf(dir string, base Costs) (*Replay, error) {
	e, env, measured, err := record.ReadResults(dir)
	if err != nil {
		return nil, err
	}
	if env.Backend == "sim" {
		return nil, fmt.Errorf("%s: %w", dir, ErrSimulated)
	}
	costs, err := MeasuredCosts(dir, e, env, measured, base)
	if err != nil {
		return nil, err
	}
	return &Replay{Dir: dir, Experiment: e, Env: env, Measured: measured, Costs: costs,
		Seeds: RecordedSeeds(measured), LoadGenInRoot: env.LoadGen == nil}, nil
}

// Options are the simulator's options that replay r on a machine of cores
// CPUs (0: the measured machine's).
func (r *Replay) Options(cores int) Options {
	if cores == 0 {
		cores = r.Env.Cores
	}
	return Options{Cores: cores, Costs: r.Costs, RepeatSeeds: r.Seeds, LoadGenInRoot: r.LoadGenInRoot}
}

// WriteComparison prints the simulated runs (written to dir) against the
// measured ones per config and figure, then one line saying whether every
// figure is within DefaultTolerances; it returns how many are not.
func (r *Replay) WriteComparison(w io.Writer, simulated []*record.Run, dir string) int {
	tol := DefaultTolerances
	bad := WriteComparison(w, Compare(r.Experiment, r.Measured, simulated, r.Dir, dir, tol))
	how := fmt.Sprintf("(throttled periods %g points, p50/p99 %g%%, throughput %g%%)", tol.ThrottledPoints, 100*tol.Latency, 100*tol.Goodput)
	if bad > 0 {
		fmt.Fprintf(w, "%d figures outside the tolerances %s\n", bad, how)
	} else {
		fmt.Fprintf(w, "every figure within the tolerances %s\n", how)
	}
	return bad
}
