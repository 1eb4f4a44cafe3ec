package cfs

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestFromSamplesInPlace checks that FromSamplesInPlace, which rewrites
// the samples it is given, makes the Demand FromSamples makes of copies of
// them: with a gap cut out, a counter that fell, and times that start
// anywhere.
func TestFromSamplesInPlace(t *testing.T) {
	ms := time.Millisecond
	cases := map[string][2][]time.Duration{
		"plain":     {{5 * ms, 15 * ms, 25 * ms}, {100, 200, 300}},
		"gap":       {{5 * ms, 15 * ms, 3 * time.Second, 3*time.Second + 10*ms}, {0, 4 * ms, 9 * ms, 12 * ms}},
		"reset":     {{1 * ms, 11 * ms, 21 * ms, 31 * ms}, {50 * ms, 55 * ms, 2 * ms, 6 * ms}},
		"gap+reset": {{0, 10 * ms, 2 * time.Second, 2*time.Second + 10*ms, 2*time.Second + 20*ms}, {0, 5 * ms, 7 * ms, 1 * ms, 3 * ms}},
	}
	for name, c := range cases {
		want := FromSamples(c[0], c[1])
		got := FromSamplesInPlace(slices.Clone(c[0]), slices.Clone(c[1]))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: in place %+v, copied %+v", name, got, want)
		}
		if len(want.Warnings) == 0 && name != "plain" {
			t.Errorf("%s: no warning", name)
		}
	}
}
