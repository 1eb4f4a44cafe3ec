package experiment

import (
	"bytes"
	"strings"
	"testing"
)

// TestDescribe checks what validate shows of examples/limits.yaml: the
// cgroup settings each config gets, GOMAXPROCS on the machine given, and
// every run in order.
func TestDescribe(t *testing.T) {
	e, err := LoadFile("../examples/limits.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Describe(&b, e, "limits.yaml", 2); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"limits.yaml: valid\n",
		"experiment limits: 4 runs (2 configs x 1 loads x 2 repeats, interleaved)",
		"GOMAXPROCS on 2 CPUs",
		"unlimited  1          -        -      max/100000",
		"limited    4          250m     250m   25000/100000     0.25",
		"  4 limited/load0/r2\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the description lacks %q:\n%s", want, out)
		}
	}
}
