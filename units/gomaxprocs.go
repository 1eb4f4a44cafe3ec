package units

import (
	"fmt"
	"math"
	"strconv"
)

// GOMAXPROCS is a policy for a Go server's GOMAXPROCS: all host CPUs (the
// zero value, like a thread-per-request server that ignores its limit), a
// fixed number, or the CPU limit rounded up (what automaxprocs-style tuning
// and Go's container-aware default do).
type GOMAXPROCS struct {
	limit bool
	n     int // fixed, when > 0
}

// Policies.
var (
	GOMAXPROCSHost  = GOMAXPROCS{}
	GOMAXPROCSLimit = GOMAXPROCS{limit: true}
)

// FixedGOMAXPROCS is the policy of n threads, 1 to MaxCPUs.
func FixedGOMAXPROCS(n int) (GOMAXPROCS, error) {
	if n < 1 || n > MaxCPUs {
		return GOMAXPROCS{}, fmt.Errorf("gomaxprocs %d: want host, limit or 1 to %d", n, MaxCPUs)
	}
	return GOMAXPROCS{n: n}, nil
}

// ParseGOMAXPROCS parses "host" (or ""), "limit" or a number from 1 to
// MaxCPUs written in decimal digits ("4abc", "0x10", "+4" and "4.0" are
// refused).
func ParseGOMAXPROCS(s string) (GOMAXPROCS, error) {
	switch s {
	case "", "host":
		return GOMAXPROCSHost, nil
	case "limit":
		return GOMAXPROCSLimit, nil
	}
	bad := fmt.Errorf("gomaxprocs %q: want host, limit or a number from 1 to %d", s, MaxCPUs)
	if !digits(s) {
		return GOMAXPROCS{}, bad
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxCPUs {
		return GOMAXPROCS{}, bad
	}
	return GOMAXPROCS{n: n}, nil
}

// String writes the policy as ParseGOMAXPROCS reads it.
func (p GOMAXPROCS) String() string {
	switch {
	case p.limit:
		return "limit"
	case p.n > 0:
		return strconv.Itoa(p.n)
	}
	return "host"
}

// Fixed returns the policy's number of threads, 0 unless it is fixed.
func (p GOMAXPROCS) Fixed() int { return p.n }

// IsLimit reports whether the policy follows the CPU limit.
func (p GOMAXPROCS) IsLimit() bool { return p.limit }

// Resolve returns the GOMAXPROCS the policy gives a process on a machine of
// hostCPUs, allowed to run on availCPUs of them (its affinity or cpuset),
// under a limit of limitCores (quota / period; 0 for none), and says where
// the number came from. "limit" takes the limit rounded up, at least 1 and at
// most availCPUs; with no limit, availCPUs.
func (p GOMAXPROCS) Resolve(hostCPUs, availCPUs int, limitCores float64) (int, string) {
	switch {
	case p.n > 0:
		return p.n, "fixed"
	case !p.limit:
		return hostCPUs, "host CPUs"
	case !(limitCores > 0):
		return availCPUs, "limit (none set: CPUs in affinity mask)"
	}
	// The epsilon keeps 2.0000000001 (a quota that is not a whole multiple
	// of the period by rounding only) at 2.
	n := int(math.Ceil(min(limitCores, MaxCPUs) - 1e-9))
	return max(1, min(n, availCPUs)), fmt.Sprintf("limit (%.3g CPUs)", limitCores)
}

// MarshalText writes the policy as text (YAML and JSON use it).
func (p GOMAXPROCS) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText parses the policy with ParseGOMAXPROCS.
func (p *GOMAXPROCS) UnmarshalText(b []byte) error {
	v, err := ParseGOMAXPROCS(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}
