package units

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxCPUs bounds every count of CPUs throttlelab takes: CPU quantities (4096
// CPUs), CPU numbers in a cpuset (0 to 4095), simulated machines, GOMAXPROCS
// and thread counts. Larger values are mistakes, and the bound keeps quota
// arithmetic and cpuset lists small.
const MaxCPUs = 4096

// MaxMilliCPU is MaxCPUs in millicores.
const MaxMilliCPU = MaxCPUs * 1000

func errQuantity(s string) error {
	return fmt.Errorf("cpu quantity %q: want millicores such as 250m, or cores such as 0.25", s)
}

// ParseMilliCPU parses a Kubernetes CPU quantity ("250m", "0.25", "2") into
// millicores, at most MaxMilliCPU. A finer value is rounded up to the next
// millicore, as resource.Quantity.MilliValue does, and roundedUp says so: the
// value that takes effect is not the one written. Signs, exponents and the
// other suffixes Kubernetes knows (k, M, u, n) are refused.
func ParseMilliCPU(s string) (milli int64, roundedUp bool, err error) {
	s = strings.TrimSpace(s)
	if m, ok := strings.CutSuffix(s, "m"); ok {
		if m == "" || !digits(m) {
			return 0, false, errQuantity(s)
		}
		v, err := strconv.ParseInt(m, 10, 64)
		if err != nil || v > MaxMilliCPU {
			return 0, false, tooMuchCPU(s)
		}
		return v, false, nil
	}
	whole, frac, _ := strings.Cut(s, ".")
	if (whole == "" && frac == "") || !digits(whole) || !digits(frac) {
		return 0, false, errQuantity(s)
	}
	if whole == "" {
		whole = "0"
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > MaxCPUs {
		return 0, false, tooMuchCPU(s)
	}
	milli = w * 1000
	if frac != "" {
		f, _ := strconv.ParseInt((frac + "000")[:3], 10, 64)
		milli += f
		if strings.Trim(frac[min(3, len(frac)):], "0") != "" {
			milli++ // a finer fraction rounds up to the next millicore
			roundedUp = true
		}
	}
	if milli > MaxMilliCPU {
		return 0, false, tooMuchCPU(s)
	}
	return milli, roundedUp, nil
}

func tooMuchCPU(s string) error {
	return fmt.Errorf("cpu quantity %q: more than %d CPUs, the most throttlelab takes", s, MaxCPUs)
}

// digits reports whether s holds only the digits 0-9 (true for "").
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// FormatMilliCPU writes millicores as Kubernetes does: "2" for whole CPUs,
// "250m" otherwise.
func FormatMilliCPU(milli int64) string {
	if milli%1000 == 0 {
		return strconv.FormatInt(milli/1000, 10)
	}
	return strconv.FormatInt(milli, 10) + "m"
}

// CPUQuantity is a CPU quantity of a spec, parsed: its millicores, and the
// text it was written as, which it is written back as (a spec resolved and
// saved reads as its author wrote it: "0.5" stays "0.5", not "500m"). The
// zero value is a quantity not given.
type CPUQuantity struct {
	// Milli is the quantity in millicores, rounded up as Kubernetes rounds it.
	Milli     int64
	roundedUp bool
	text      string
}

// ParseCPUQuantity parses a Kubernetes CPU quantity with ParseMilliCPU; ""
// is a quantity not given (the zero value).
func ParseCPUQuantity(s string) (CPUQuantity, error) {
	if s == "" {
		return CPUQuantity{}, nil
	}
	m, up, err := ParseMilliCPU(s)
	if err != nil {
		return CPUQuantity{}, err
	}
	return CPUQuantity{Milli: m, roundedUp: up, text: s}, nil
}

// Millicores is the quantity of m millicores, written as FormatMilliCPU
// writes it.
func Millicores(m int64) CPUQuantity {
	return CPUQuantity{Milli: m, text: FormatMilliCPU(m)}
}

// IsZero reports a quantity not given.
func (q CPUQuantity) IsZero() bool { return q == CPUQuantity{} }

// RoundedUp reports that the text was finer than a millicore, so that Milli
// is not quite what was written.
func (q CPUQuantity) RoundedUp() bool { return q.roundedUp }

// Cores is the quantity in CPUs.
func (q CPUQuantity) Cores() float64 { return float64(q.Milli) / 1000 }

// String is the quantity as it was written ("" for none).
func (q CPUQuantity) String() string {
	if q.text == "" && q.Milli != 0 {
		return FormatMilliCPU(q.Milli)
	}
	return q.text
}

// MarshalText writes the quantity as String does.
func (q CPUQuantity) MarshalText() ([]byte, error) { return []byte(q.String()), nil }

// UnmarshalText parses the quantity with ParseCPUQuantity.
func (q *CPUQuantity) UnmarshalText(text []byte) error {
	v, err := ParseCPUQuantity(string(text))
	if err != nil {
		return err
	}
	*q = v
	return nil
}
