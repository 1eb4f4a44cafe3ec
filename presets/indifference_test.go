package presets

import (
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/stats"
	"github.com/throttlelab/throttlelab/verdict"
)

// TestIndifference judges F14's kind of condition (p99 ratio >= 0.9 with
// an indifference of 0.05) on intervals inside, across and beyond the
// margin: only an interval that straddles the threshold within the margin
// is judged for lying there, and it holds within the margin (reproduced),
// as the rule's last look judges such an interval (verdict.Condition's
// withinMargin checks "holds" first): its words say so.
func TestIndifference(t *testing.T) {
	for _, c := range []struct {
		iv          stats.Interval
		want        verdict.Reproduction
		indifferent bool
	}{
		{stats.Interval{0.87, 0.94}, verdict.Reproduced, true},
		{stats.Interval{0.84, 0.94}, verdict.Inconclusive, false}, // past the margin below
		{stats.Interval{0.91, 0.94}, verdict.Reproduced, false},
		{stats.Interval{0.80, 0.88}, verdict.NotReproduced, false},
	} {
		iv := c.iv
		cd := verdict.Condition{Name: "p99 pinned / shared", Value: (iv[0] + iv[1]) / 2, CI95: &iv, Op: ">=", Threshold: 0.9, Margin: "m", Indifference: 0.05}
		if err := cd.Judge(5); err != nil {
			t.Fatal(err)
		}
		if cd.Outcome != c.want || cd.Indifferent != c.indifferent {
			t.Errorf("interval %v: %s (indifferent %v), want %s (%v)", iv, cd.Outcome, cd.Indifferent, c.want, c.indifferent)
		}
		if says := strings.Contains(cd.String(), "holds within the margin: the interval lies within 0.05 of the threshold"); says != c.indifferent {
			t.Errorf("interval %v: words %q", iv, cd.String())
		}
	}
}
