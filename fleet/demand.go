package fleet

import (
	"context"
	"fmt"
	"path/filepath"
)

// DemandError is a recorded demand file that cannot be read: bad input.
type DemandError struct {
	Path string
	Err  error
}

func (e *DemandError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *DemandError) Unwrap() error { return e.Err }

// Recorded is an Evaluator over recorded demand: DIR/NAMESPACE/WORKLOAD/CONTAINER.csv
// in advise's CSV format (time_ns,usage_ns, as advise --save-csv writes),
// replayed locally through advise's quota model at the proposed limit
// (100 ms period, no burst, every phase).
type Recorded struct {
	Dir   string
	cache map[string]*recordedFile
}

// Predict implements Evaluator.
func (r *Recorded) Predict(_ context.Context, mc ManifestContainer) (Prediction, string, string, error) {
	p := filepath.Join(r.Dir, mc.Workload.Namespace, mc.Workload.Name, mc.Container+".csv")
	f, err := r.load(p)
	if err != nil {
		return Prediction{}, "", "", err
	}
	pr, err := evaluateDemand(f.d, mc.LimitMilli)
	if err != nil {
		return Prediction{}, "", "", &DemandError{p, fmt.Errorf("at %s: %w", cpu(mc.LimitMilli), err)}
	}
	return pr, "", "demand " + p, nil
}
