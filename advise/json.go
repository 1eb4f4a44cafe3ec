package advise

import (
	"encoding/json"
	"reflect"
	"sync"
)

// countedFields are the fields of an Evaluation only counted (CountsOnly)
// that the JSON writes, under Evaluation's own names: the fields a replay
// gives (throttled time, bursts, lost work, delays) are left out rather
// than written as zeros.
var countedFields = map[string]bool{"LimitMilli": true, "BurstMilli": true, "PeriodUsec": true, "QuotaUsec": true, "BurstUsec": true,
	"ThrottledRatio": true, "ThrottledRatioWorst": true, "ThrottledRatioBest": true, "Periods": true, "ThrottledPeriods": true,
	"ThrottledRatioRange": true, "ThrottledRatioSliceBound": true, "CountsOnly": true, "Saturated": true, "Phases": true}

// counted is the struct the JSON writes an Evaluation only counted as:
// Evaluation's countedFields, with their tags, in its order; index holds
// each one's index in Evaluation.
var counted = sync.OnceValue(func() (c struct {
	typ   reflect.Type
	index []int
}) {
	t := reflect.TypeFor[Evaluation]()
	var fields []reflect.StructField
	for i := range t.NumField() {
		if f := t.Field(i); countedFields[f.Name] {
			fields = append(fields, reflect.StructField{Name: f.Name, Type: f.Type, Tag: f.Tag})
			c.index = append(c.index, i)
		}
	}
	c.typ = reflect.StructOf(fields)
	return c
})

// evalJSON is e as the JSON writes it: without the fields a replay gives
// when e is only counted.
func evalJSON(e Evaluation) any {
	if !e.CountsOnly {
		return e
	}
	c := counted()
	v, ev := reflect.New(c.typ).Elem(), reflect.ValueOf(e)
	for i, j := range c.index {
		v.Field(i).Set(ev.Field(j))
	}
	return v.Interface()
}

// baselineJSON is a Baseline as the JSON writes it (its evaluation through
// evalJSON).
type baselineJSON struct {
	Name       string `json:"name"`
	How        string `json:"how"`
	Windows    int    `json:"windows,omitempty"`
	Missing    string `json:"missing,omitempty"`
	Evaluation any    `json:"evaluation,omitempty"`
}

// MarshalJSON writes the advice with each evaluation only counted
// (CountsOnly) without the fields it does not have, in the grid and in
// the baselines.
func (a Advice) MarshalJSON() ([]byte, error) {
	type plain Advice // without this method
	evs := make([]any, len(a.Evaluations))
	for i, e := range a.Evaluations {
		evs[i] = evalJSON(e)
	}
	bls := make([]baselineJSON, len(a.Baselines))
	for i, b := range a.Baselines {
		bls[i] = baselineJSON{Name: b.Name, How: b.How, Windows: b.Windows, Missing: b.Missing}
		if b.Evaluation != nil {
			bls[i].Evaluation = evalJSON(*b.Evaluation)
		}
	}
	return json.Marshal(struct {
		Evaluations []any `json:"evaluations"`
		plain
		Baselines []baselineJSON `json:"baselines"`
	}{evs, plain(a), bls})
}
