package presets

import (
	"testing"

	"github.com/throttlelab/throttlelab/units"
)

// TestPresetsGOMAXPROCS keeps docs/presets.md true: every preset's servers run
// with the host policy (F4's single-threaded config serves one request at a
// time), except F15, whose configs each fix GOMAXPROCS to the count in their
// name (the setting is what F15 varies); no finding depends on
// automaxprocs, go or the deprecated limit.
func TestPresetsGOMAXPROCS(t *testing.T) {
	fixed := map[string]int{"gomaxprocs-1": 1, "gomaxprocs-2": 2, "gomaxprocs-8": 8}
	for _, p := range All() {
		e, err := p.Spec()
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		for _, c := range e.Spec.Configs {
			if p.Finding == "F15" {
				n, ok := fixed[c.Name]
				want, err := units.FixedGOMAXPROCS(n)
				if !ok || err != nil || c.Server.GOMAXPROCS != want {
					t.Errorf("%s config %s: gomaxprocs %s; docs/presets.md says F15's configs gomaxprocs-1, -2 and -8 fix it to 1, 2 and 8", p.Name, c.Name, c.Server.GOMAXPROCS)
				}
			} else if c.Server.GOMAXPROCS != units.GOMAXPROCSHost {
				t.Errorf("%s config %s: gomaxprocs %s; docs/presets.md says every preset but F15 uses host: update it", p.Name, c.Name, c.Server.GOMAXPROCS)
			}
			if c.Server.Single && p.Finding != "F4" {
				t.Errorf("%s config %s: single; docs/presets.md says only F4 has a single-threaded config", p.Name, c.Name)
			}
		}
	}
}
