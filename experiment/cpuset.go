package experiment

import (
	"fmt"
	"strconv"

	"github.com/throttlelab/throttlelab/cgroup"
)

// Cpuset is a cpuset of a spec, parsed: the CPUs it names ("0-1,4"), kept as
// written (the kernel's cpuset.cpus takes the same list), with how many CPUs
// it names and the highest. The zero value is no cpuset.
type Cpuset struct {
	text string
	// Count is how many CPUs the list names; Top the highest of them.
	Count, Top int
}

// ParseCpuset parses a cpuset list with cgroup.ParseCPUList; "" is no
// cpuset. A list that names no CPU is refused.
func ParseCpuset(s string) (Cpuset, error) {
	if s == "" {
		return Cpuset{}, nil
	}
	cpus, err := cgroup.ParseCPUList(s)
	if err != nil {
		return Cpuset{}, err
	}
	if len(cpus) == 0 {
		return Cpuset{}, fmt.Errorf("%q names no CPU", s)
	}
	return Cpuset{text: s, Count: len(cpus), Top: cpus[len(cpus)-1]}, nil
}

// String is the list as written ("" for none).
func (c Cpuset) String() string { return c.text }

// IsZero reports no cpuset (and lets YAML's omitempty leave it out).
func (c Cpuset) IsZero() bool { return c == Cpuset{} }

// MarshalText writes the list as String does.
func (c Cpuset) MarshalText() ([]byte, error) { return []byte(c.text), nil }

// UnmarshalText parses the list with ParseCpuset.
func (c *Cpuset) UnmarshalText(text []byte) error {
	v, err := ParseCpuset(string(text))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// CPURange is the cpuset of CPUs lo to hi, written "lo-hi" ("lo" for one).
func CPURange(lo, hi int) Cpuset {
	text := strconv.Itoa(lo)
	if hi != lo {
		text += "-" + strconv.Itoa(hi)
	}
	return Cpuset{text: text, Count: hi - lo + 1, Top: hi}
}
