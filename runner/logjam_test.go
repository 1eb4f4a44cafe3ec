package runner_test

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/throttlelab/throttlelab/presets"
	"github.com/throttlelab/throttlelab/report"
	"github.com/throttlelab/throttlelab/runner"
	"github.com/throttlelab/throttlelab/sim"
)

// simulatedLogJam runs the preset f01-logjam in the simulator at its own
// scale and reads the run back as the report does: the demand the report's
// Advice section advises on.
func simulatedLogJam(tb testing.TB) *report.Set {
	tb.Helper()
	p, ok := presets.Lookup("f01-logjam")
	if !ok {
		tb.Fatal("no preset f01-logjam")
	}
	e, err := p.Spec()
	if err != nil {
		tb.Fatal(err)
	}
	dir := filepath.Join(tb.TempDir(), "run")
	if _, err := runner.Run(context.Background(), e, sim.NewBackend(sim.Options{Cores: p.Cores}), runner.Options{Dir: dir, Out: io.Discard}); err != nil {
		tb.Fatal(err)
	}
	s, err := report.ReadSet([]string{dir})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
