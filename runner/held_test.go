package runner_test

import (
	"context"
	"io"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/throttlelab/throttlelab/presets"
	"github.com/throttlelab/throttlelab/report"
	"github.com/throttlelab/throttlelab/runner"
	"github.com/throttlelab/throttlelab/sim"
)

// TestHeldRunsReadAsWritten: the simulator's runs handed to the report in
// memory (record.Held) give the report what reading their files back
// gives, value for value.
func TestHeldRunsReadAsWritten(t *testing.T) {
	for _, name := range []string{"f09-burn-flow", "f13-cpu-burst"} {
		p, ok := presets.Lookup(name)
		if !ok {
			t.Fatalf("no preset %s", name)
		}
		e, err := p.Spec()
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "run")
		res, err := runner.Run(context.Background(), e, sim.NewBackend(sim.Options{Cores: p.Cores}), runner.Options{Dir: dir, Out: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Runs {
			if r.Held == nil {
				t.Fatalf("%s: run %s: nothing held", name, r.ID)
			}
		}
		held, err := report.ReadSet([]string{dir}, res.Runs...)
		if err != nil {
			t.Fatal(err)
		}
		read, err := report.ReadSet([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(held, read) {
			t.Errorf("%s: the report from the held runs differs from the one read back", name)
		}
	}
}
