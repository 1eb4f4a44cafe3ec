package source

import (
	"errors"
	"fmt"
	"testing"
)

func TestFailed(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", errors.New("boom"), false},
		{"unreachable wrapped", fmt.Errorf("Prometheus at http://p: %w", ErrUnreachable), true},
		{"no data", fmt.Errorf("x: %w", ErrNoData), true},
		{"typed, other cause", &Error{Source: "API server", Addr: "https://k", Err: errors.New("forbidden")}, true},
		{"typed, not found", &Error{Source: "API server", Err: fmt.Errorf("deploy/web: %w", ErrNotFound)}, false},
		{"not found", ErrNotFound, false},
	} {
		if got := Failed(c.err); got != c.want {
			t.Errorf("%s: Failed(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

func TestErrorText(t *testing.T) {
	e := &Error{Source: "agent", Addr: "http://10.0.0.5:9101", Err: ErrUnreachable}
	if got, want := e.Error(), "agent at http://10.0.0.5:9101: unreachable"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(fmt.Errorf("wrapped: %w", e), ErrUnreachable) {
		t.Error("a wrapped *Error does not unwrap to its cause")
	}
}
