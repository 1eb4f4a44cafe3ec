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

func TestVM(t *testing.T) {
	t.Setenv(VMEnv, "")
	if VM() != "" {
		t.Fatalf("VM() = %q with %s empty", VM(), VMEnv)
	}
	t.Setenv(VMEnv, "6.12.57+deb13-cloud-amd64/v2")
	if got := VM(); got != "6.12.57+deb13-cloud-amd64/v2" {
		t.Fatalf("VM() = %q", got)
	}
}

// TestArithmetic checks that Arithmetic skips exactly when the binary has the
// race detector, so make test's second, race-free pass is where those tests run.
func TestArithmetic(t *testing.T) {
	ran := false
	t.Run("arithmetic", func(t *testing.T) {
		Arithmetic(t)
		ran = true
	})
	if ran == Race {
		t.Errorf("Arithmetic with Race %v: the test body ran = %v", Race, ran)
	}
}
