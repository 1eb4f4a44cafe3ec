package advise_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
)

// TestSaturated checks that a limit below the window's mean use is counted,
// not replayed, marked saturated, meets no delay budget, and is written as
// saturated in the text and JSON; and that a limit above it is not.
func TestSaturated(t *testing.T) {
	d := randomDemand(7, 2*time.Minute, 1)
	mean := d.MeanCores()
	low, high := int64(mean*1000*0.8), int64(mean*1000*3)
	a, err := advise.Advise(d, advise.Request{Limits: []int64{low, high}, AllDelays: true, Target: advise.Target{MaxDelay: time.Second}}, advise.Sampled{Source: "random"})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range a.Evaluations {
		if e.BurstMilli != 0 || (e.LimitMilli != low && e.LimitMilli != high) {
			continue
		}
		seen++
		want := e.LimitMilli == low
		if e.Saturated != want || (want && !e.CountsOnly) {
			t.Errorf("%dm (mean %.3f cores): saturated %v counts only %v, want saturated %v", e.LimitMilli, mean, e.Saturated, e.CountsOnly, want)
		}
		if want && a.Recommendation.Target.Meets(e) {
			t.Errorf("%dm: saturated but meets a delay budget", e.LimitMilli)
		}
	}
	if seen != 2 {
		t.Fatalf("found %d of the 2 limits in the grid", seen)
	}
	var b strings.Builder
	if err := advise.WriteTextGrid(&b, a); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "saturated") || !strings.Contains(b.String(), "queue grows without end") {
		t.Errorf("the text shows no saturated row:\n%s", b.String())
	}
	js, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"saturated":true`) {
		t.Errorf("the JSON marks no row saturated")
	}
}
