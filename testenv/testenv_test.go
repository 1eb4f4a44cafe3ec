package testenv

import "testing"

func TestInCI(t *testing.T) {
	for _, c := range []struct {
		v    string
		want bool
	}{{"true", true}, {"1", true}, {"TRUE", true}, {"false", false}, {"0", false}, {"", false}, {"yes please", false}} {
		t.Setenv("CI", c.v)
		if got := InCI(); got != c.want {
			t.Errorf("CI=%q: InCI() = %v, want %v", c.v, got, c.want)
		}
	}
}
