package limitmap

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"

	"github.com/throttlelab/throttlelab/units"
)

// TestHeadline checks the map's sentence against the map it sums up: from
// the limit it names up no cell passes the bound, and at the limit below it
// the cell it quotes is there with the ratio it quotes.
func TestHeadline(t *testing.T) {
	b, err := os.ReadFile("testdata/map.json")
	if err != nil {
		t.Fatal(err)
	}
	var m Map
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	h := Headline(&m)
	t.Log(h)
	re := regexp.MustCompile(`with a limit of (\S+) per instance or more; at (\S+) it (?:reached ([0-9.]+)x|was overloaded) at ([0-9.]+) req/s`)
	g := re.FindStringSubmatch(h)
	if g == nil {
		t.Fatalf("headline %q names no knee; the fixture has one", h)
	}
	from, _, err := units.ParseMilliCPU(g[1])
	if err != nil {
		t.Fatal(err)
	}
	below, _, err := units.ParseMilliCPU(g[2])
	if err != nil {
		t.Fatal(err)
	}
	quoted := false
	for _, c := range m.Cells {
		ok := c.P99Ratio != nil && !c.Overloaded && *c.P99Ratio < HeadlineBound
		if c.LimitMilli >= from && !ok {
			t.Errorf("cell %s at %g req/s passes %gx, above the limit the headline says is enough", units.FormatMilliCPU(c.LimitMilli), *c.RateRPS, float64(HeadlineBound))
		}
		overloaded := c.Overloaded || c.P99Ratio == nil
		if c.LimitMilli == below && fmtLoad(*c.RateRPS) == g[4] && (g[3] == "" && overloaded || !overloaded && fmtRatio(*c.P99Ratio) == g[3]) {
			quoted = true
		}
	}
	if !quoted {
		t.Errorf("no cell at %s and %s req/s has the ratio %q (empty: overloaded) the headline quotes", g[2], g[4], g[3])
	}
}
