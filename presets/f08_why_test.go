package presets

import (
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/record"
)

// TestF08Why reads the largest limit against the machine: on 2 cores a
// 2-CPU quota that never throttled cannot be why the mean differs; on 4
// cores, or once throttled, it says something else.
func TestF08Why(t *testing.T) {
	for _, c := range []struct {
		name      string
		cores     int
		throttled float64
		want      string
	}{
		{"whole machine, never throttled", 2, 0, "a quota as large as the machine cannot bind"},
		{"throttled", 2, 12.5, "was throttled in 12.5% of periods"},
		{"room to spare, never throttled", 4, 0, ""},
	} {
		e, _, err := f08OnoffApi.Quick(2)
		if err != nil {
			t.Fatal(err)
		}
		r := &Results{Spec: e, Env: record.Env{Cores: c.cores},
			Summary: &record.ExperimentSummary{Configs: []record.ConfigSummary{{Config: "limit-4", ThrottledPct: c.throttled}}}}
		got := f08Why(r)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: why = %q, want %q", c.name, got, c.want)
		}
	}
}
