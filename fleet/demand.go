package fleet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/demand"
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
	cache map[string]*advise.Demand
}

// Predict implements Evaluator.
func (r *Recorded) Predict(_ context.Context, mc ManifestContainer) (Prediction, string, string, error) {
	p := filepath.Join(r.Dir, mc.Workload.Namespace, mc.Workload.Name, mc.Container+".csv")
	d := r.cache[p]
	if d == nil {
		fh, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			return Prediction{}, "", "", &Skipped{"no recorded demand at " + p}
		}
		if err != nil {
			return Prediction{}, "", "", &DemandError{p, err}
		}
		d, err = demand.ReadCSV(fh)
		fh.Close()
		if err != nil {
			return Prediction{}, "", "", &DemandError{p, err}
		}
		if r.cache == nil {
			r.cache = map[string]*advise.Demand{}
		}
		r.cache[p] = d
	}
	pr, err := evaluateDemand(d, mc.LimitMilli)
	if err != nil {
		return Prediction{}, "", "", &DemandError{p, fmt.Errorf("at %s: %w", cpu(mc.LimitMilli), err)}
	}
	return pr, "", "demand " + p, nil
}
