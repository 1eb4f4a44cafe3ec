package presets

import (
	"testing"

	"github.com/throttlelab/throttlelab/units"
)

// TestPresetsGOMAXPROCS keeps docs/presets.md true: every preset's servers run
// with the host policy (F4's single-threaded config serves one request at a
// time), so no finding depends on automaxprocs, go or the deprecated limit.
func TestPresetsGOMAXPROCS(t *testing.T) {
	for _, p := range All() {
		e, err := p.Spec()
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		for _, c := range e.Spec.Configs {
			if c.Server.GOMAXPROCS != units.GOMAXPROCSHost {
				t.Errorf("%s config %s: gomaxprocs %s; docs/presets.md says every preset uses host: update it", p.Name, c.Name, c.Server.GOMAXPROCS)
			}
			if c.Server.Single && p.Finding != "F4" {
				t.Errorf("%s config %s: single; docs/presets.md says only F4 has a single-threaded config", p.Name, c.Name)
			}
		}
	}
}
