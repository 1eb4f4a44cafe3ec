package units

import (
	"fmt"
	"math"
	"strconv"
)

// GOMAXPROCS is a policy for a Go server's GOMAXPROCS, each named after what
// it does:
//
//   - host (the zero value): all host CPUs, like a thread-per-request server
//     that ignores its limit;
//   - a fixed number;
//   - automaxprocs: what go.uber.org/automaxprocs sets, the quota rounded
//     down, at least 1 (all CPUs in the affinity mask without a quota);
//   - go: the Go 1.25+ runtime's own default, the quota rounded up, at least
//     2, at most the CPUs in the affinity mask;
//   - limit: deprecated, the quota rounded up, at least 1, at most the CPUs
//     in the affinity mask, which matches neither of the two above (it is
//     kept so that specs and results that name it still read the same).
type GOMAXPROCS struct {
	kind gmpKind
	n    int // fixed, when > 0
}

type gmpKind uint8

const (
	gmpHost gmpKind = iota
	gmpLimit
	gmpAutomaxprocs
	gmpGo
)

// Policies.
var (
	GOMAXPROCSHost         = GOMAXPROCS{}
	GOMAXPROCSAutomaxprocs = GOMAXPROCS{kind: gmpAutomaxprocs}
	GOMAXPROCSGo           = GOMAXPROCS{kind: gmpGo}
	// GOMAXPROCSLimit is the deprecated "limit" (see GOMAXPROCS).
	GOMAXPROCSLimit = GOMAXPROCS{kind: gmpLimit}
)

const gomaxprocsWant = "want host, automaxprocs, go or a number from 1 to"

// FixedGOMAXPROCS is the policy of n threads, 1 to MaxCPUs.
func FixedGOMAXPROCS(n int) (GOMAXPROCS, error) {
	if n < 1 || n > MaxCPUs {
		return GOMAXPROCS{}, fmt.Errorf("gomaxprocs %d: %s %d", n, gomaxprocsWant, MaxCPUs)
	}
	return GOMAXPROCS{n: n}, nil
}

// ParseGOMAXPROCS parses "host" (or ""), "automaxprocs", "go", the
// deprecated "limit" or a number from 1 to MaxCPUs written in decimal digits
// ("4abc", "0x10", "+4" and "4.0" are refused).
func ParseGOMAXPROCS(s string) (GOMAXPROCS, error) {
	switch s {
	case "", "host":
		return GOMAXPROCSHost, nil
	case "automaxprocs":
		return GOMAXPROCSAutomaxprocs, nil
	case "go":
		return GOMAXPROCSGo, nil
	case "limit":
		return GOMAXPROCSLimit, nil
	}
	bad := fmt.Errorf("gomaxprocs %q: %s %d", s, gomaxprocsWant, MaxCPUs)
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
	case p.n > 0:
		return strconv.Itoa(p.n)
	case p.kind == gmpLimit:
		return "limit"
	case p.kind == gmpAutomaxprocs:
		return "automaxprocs"
	case p.kind == gmpGo:
		return "go"
	}
	return "host"
}

// Fixed returns the policy's number of threads, 0 unless it is fixed.
func (p GOMAXPROCS) Fixed() int { return p.n }

// IsLimit reports whether the policy follows the CPU limit (automaxprocs,
// go or limit).
func (p GOMAXPROCS) IsLimit() bool { return p.n == 0 && p.kind != gmpHost }

// Deprecated says why the policy should not be used any more ("" unless it
// is "limit").
func (p GOMAXPROCS) Deprecated() string {
	if p.n == 0 && p.kind == gmpLimit {
		return `gomaxprocs "limit" is deprecated: it is the quota rounded up, at least 1, which neither automaxprocs (rounded down, at least 1) nor Go 1.25+ (rounded up, at least 2) does; write automaxprocs or go`
	}
	return ""
}

// Resolve returns the GOMAXPROCS the policy gives a process on a machine of
// hostCPUs, allowed to run on availCPUs of them (its affinity or cpuset),
// under a limit of limitCores (quota / period of the tightest group; 0 for
// none), and says where the number came from. Without a limit, automaxprocs,
// go and limit all give availCPUs, as the Go runtime does.
func (p GOMAXPROCS) Resolve(hostCPUs, availCPUs int, limitCores float64) (int, string) {
	switch {
	case p.n > 0:
		return p.n, "fixed"
	case p.kind == gmpHost:
		return hostCPUs, "host CPUs"
	case !(limitCores > 0) || math.IsInf(limitCores, 1):
		return availCPUs, p.String() + " (no limit: CPUs in affinity mask)"
	}
	limit := min(limitCores, MaxCPUs)
	// The epsilon keeps 2.0000000001 and 1.9999999999 (a quota that is not
	// a whole multiple of the period by rounding only) at 2.
	up, down := int(math.Ceil(limit-1e-9)), int(math.Floor(limit+1e-9))
	src := fmt.Sprintf("%s (%.3g CPUs)", p.String(), limitCores)
	switch p.kind {
	case gmpAutomaxprocs:
		return max(1, down), src
	case gmpGo:
		return min(max(2, up), availCPUs), src
	}
	return max(1, min(up, availCPUs)), src
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
