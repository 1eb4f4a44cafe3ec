package presets_test

import (
	"testing"

	"github.com/throttlelab/throttlelab/limitmap"
	"github.com/throttlelab/throttlelab/presets"
)

// TestPresetMaps checks each preset's map against its spec: the ranges
// read, the configs it names exist, and a name without a map has none.
func TestPresetMaps(t *testing.T) {
	maps := 0
	for _, p := range presets.All() {
		pm, ok := presets.MapOf(p.Name)
		if !ok {
			continue
		}
		maps++
		e, err := p.Spec()
		if err != nil {
			t.Fatal(err)
		}
		var opt limitmap.Options
		if err := (limitmap.Ranges{Limit: pm.Limit, Rate: pm.Rate, Workers: pm.Workers, Burst: pm.Burst}).Apply(&opt); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
		for _, name := range []string{pm.Limited, pm.Reference} {
			if name == "" || name == "self" {
				continue
			}
			found := false
			for _, c := range e.Spec.Configs {
				found = found || c.Name == name
			}
			if !found {
				t.Errorf("%s: its map names config %q, which the spec does not have", p.Name, name)
			}
		}
	}
	if maps == 0 {
		t.Error("no preset has a map")
	}
	if _, ok := presets.MapOf("no-such-preset"); ok {
		t.Error("a name that is no preset has a map")
	}
}
