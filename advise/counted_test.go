package advise

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestCountedJSON: an Evaluation only counted is written with the names
// Evaluation's tags give its counted fields, in Evaluation's order, and
// without the fields a replay gives; one replayed is written whole.
func TestCountedJSON(t *testing.T) {
	r := &Range{0.1, 0.3}
	e := Evaluation{LimitMilli: 300, PeriodUsec: 100000, QuotaUsec: 30000, ThrottledRatio: 0.2, Periods: 100, ThrottledPeriods: 20,
		ThrottledRatioRange: r, ThrottledSeconds: 1.5, Bursts: 3, DelayP99Ms: 12, CountsOnly: true, Phases: 10}
	b, err := json.Marshal(evalJSON(e))
	if err != nil {
		t.Fatal(err)
	}
	var want, replayOnly []string
	et := reflect.TypeFor[Evaluation]()
	for i := range et.NumField() {
		f := et.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		zero := reflect.ValueOf(e).Field(i).IsZero()
		switch {
		case !countedFields[f.Name]:
			replayOnly = append(replayOnly, name)
		case !zero || !strings.Contains(opts, "omitempty"):
			want = append(want, name)
		}
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	var got []string
	dec.Token() // {
	for dec.More() {
		k, _ := dec.Token()
		got = append(got, k.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("counted evaluation written with keys %v, want %v", got, want)
	}
	for _, k := range replayOnly {
		if slices.Contains(got, k) {
			t.Errorf("counted evaluation has the replay's %q", k)
		}
	}
	// What only a replay gives, by Go name: none of it is counted.
	for _, f := range []string{"ThrottledSeconds", "Bursts", "LostSeconds", "DelayP50Ms", "DelayP99Ms", "DelayMaxMs", "DelayP99MsRange", "DelayUnbounded"} {
		if _, ok := et.FieldByName(f); !ok || countedFields[f] {
			t.Errorf("Evaluation.%s: a field of the replay's, written for a counted evaluation (or gone)", f)
		}
	}
	e.CountsOnly = false
	if _, ok := evalJSON(e).(Evaluation); !ok {
		t.Errorf("a replayed evaluation is written as %T, want it whole", evalJSON(e))
	}
}
