package demand

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/record"
)

// Input says where the samples come from: exactly one of Pid, CgroupPath,
// Pod, CSV and ResultsDir (with Config).
type Input struct {
	Pid        int
	CgroupPath string
	Pod        string
	CSV        string
	// ResultsDir is a run recorded by throttlelab run; Config the config
	// whose first run to read, Instance the instance or neighbour.
	ResultsDir, Config, Instance string
	// Root is where /proc and the cgroup file systems are ("/").
	Root string
	// Duration is how long a live group is sampled.
	Duration time.Duration
	// Cores bounds the replay's parallelism (0: from the samples).
	Cores int
	// Progress, if set, is called when live sampling starts, with the
	// group's name; it returns the function sampling reports progress to.
	Progress func(name string, total time.Duration) func(done time.Duration)
}

// ErrInput marks an input the user must fix (none or several sources, a
// file that is not there or not a sample CSV, a duration under a period).
var ErrInput = errors.New("bad input")

// InputError is an input the user must fix. Field names the field of Input
// that carried it (CSV, Config, Duration; empty when the fields do not go
// together), so a caller can say where the value came from. It matches
// ErrInput.
type InputError struct {
	Field string
	Err   error
}

func (e *InputError) Error() string        { return e.Err.Error() }
func (e *InputError) Unwrap() error        { return e.Err }
func (e *InputError) Is(target error) bool { return target == ErrInput }

func inputErr(field, format string, args ...any) error {
	return &InputError{Field: field, Err: fmt.Errorf(format, args...)}
}

// Load reads or samples the demand in, and describes it. A live sample
// cut short by ctx keeps what it has.
func Load(ctx context.Context, in Input, minPeriod time.Duration) (*cfs.Demand, advise.Sampled, error) {
	n := 0
	for _, set := range []bool{in.Pid != 0, in.CgroupPath != "", in.Pod != "", in.CSV != "", in.ResultsDir != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, advise.Sampled{}, inputErr("", "give exactly one input: a process, a cgroup, a pod, a CSV file or a results directory")
	}
	var (
		d   *cfs.Demand
		s   advise.Sampled
		err error
	)
	switch {
	case in.CSV != "":
		fh, err := os.Open(in.CSV)
		if err != nil {
			return nil, s, inputErr("CSV", "%v", err)
		}
		d, err = ReadCSV(fh)
		fh.Close()
		if err != nil {
			return nil, s, inputErr("CSV", "%s: %v", in.CSV, err)
		}
		s.Source = in.CSV
	case in.ResultsDir != "":
		if in.Config == "" {
			return nil, s, inputErr("Config", "%s: name the config whose run to read", in.ResultsDir)
		}
		r, err := record.ReadDemand(in.ResultsDir, in.Config, in.Instance)
		if err != nil {
			return nil, s, inputErr("ResultsDir", "%v", err)
		}
		d, s.Source, s.CPUStat, s.LimitMilli, s.PeriodUsec = r.Demand, r.Source, r.CPUStat, r.LimitMilli, r.PeriodUsec
	default:
		if in.Duration < minPeriod {
			return nil, s, inputErr("Duration", "sampling for %s: too short for one period (%s): sample for at least that, better 10m or more", in.Duration, minPeriod)
		}
		root := in.Root
		if root == "" {
			root = "/"
		}
		var g *Group
		switch {
		case in.Pid != 0:
			g, err = FindPid(root, in.Pid)
		case in.Pod != "":
			g, err = FindPod(root, in.Pod)
		default:
			g, err = FindPath(root, in.CgroupPath)
		}
		if err != nil {
			return nil, s, err
		}
		var progress func(time.Duration)
		if in.Progress != nil {
			progress = in.Progress(g.Name, in.Duration)
		}
		d, s.CPUStat, err = Sample(ctx, g, in.Duration, progress)
		if err != nil && !(errors.Is(err, ctx.Err()) && d != nil) {
			return nil, s, err
		}
		s.Source, s.LimitMilli = g.Path+" ("+g.Name+")", g.LimitMilli()
		if l, err := cgroup.ReadGroupCPU(g.CPUDir, g.Version); err == nil && s.LimitMilli > 0 {
			s.PeriodUsec = int64(l.PeriodUsec)
		}
	}
	if in.Cores > 0 {
		d.Cores = in.Cores // else the samples' own bound (kept by Reconstruct)
	}
	return d, s, nil
}
