// Package source names the ways a data source fails (Prometheus, a
// throttlelab agent, the Kubernetes API server), as values a caller can
// tell apart without reading message text. The command line turns them
// into exit status 3 (ErrUnreachable, ErrNoData, any *Error) or 2
// (ErrNotFound: the name given is at fault, not the source).
//
// It is a leaf: a library that reads a source (fleet, k8s, agent clients)
// wraps these and stays free of the command line.
package source

import "errors"

var (
	// ErrUnreachable: the source could not be asked (connection refused,
	// DNS, timeout, TLS) or answered with an HTTP error of its own.
	ErrUnreachable = errors.New("unreachable")
	// ErrNoData: the source answered but holds nothing to read (no
	// series, an agent that summarises no container yet).
	ErrNoData = errors.New("no data")
	// ErrNotFound: the source answered and does not know the object named
	// (a workload that does not exist): the name is bad input.
	ErrNotFound = errors.New("not found")
)

// Error is a data source's failure: which source, where, and why. Err
// usually wraps ErrUnreachable or ErrNoData; any *Error not wrapping
// ErrNotFound is read as the source failing (RBAC forbidden on the API
// server, a proxy that answers with garbage).
type Error struct {
	// Source is what was asked, in words: "Prometheus", "agent",
	// "API server".
	Source string
	// Addr is where: a base URL, a node name, a server address.
	Addr string
	// Err is the cause.
	Err error
}

// Error writes "SOURCE at ADDR: CAUSE" (without " at ADDR" when Addr is empty).
func (e *Error) Error() string {
	where := e.Source
	if e.Addr != "" {
		where += " at " + e.Addr
	}
	if e.Err == nil {
		return where + ": failed"
	}
	return where + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Failed reports whether err is a data source failing: ErrUnreachable,
// ErrNoData, or an *Error whose cause is not ErrNotFound.
func Failed(err error) bool {
	if err == nil || errors.Is(err, ErrNotFound) {
		return false
	}
	var se *Error
	return errors.Is(err, ErrUnreachable) || errors.Is(err, ErrNoData) || errors.As(err, &se)
}
