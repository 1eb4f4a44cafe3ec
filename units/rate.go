package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bounds of a request rate, in requests per second: below MinRate a request
// would come less than once in 17 minutes, above MaxRate no load generator on
// one machine keeps up, and both keep 1/rate a representable interval.
const (
	MinRate = 0.001
	MaxRate = 1e6
)

// ParseRate parses a rate in requests per second ("200", "0.5", "1e3") and
// checks it with CheckRate.
func ParseRate(s string) (float64, error) {
	s = strings.TrimSpace(s)
	r, err := strconv.ParseFloat(s, 64)
	// Decimal only: ParseFloat also reads "inf", "NaN", "0x1p4" and "1_000".
	if err != nil || strings.Trim(s, "0123456789.eE+-") != "" || math.IsNaN(r) || math.IsInf(r, 0) {
		return 0, fmt.Errorf("rate %q: want requests per second, such as 200 or 0.5", s)
	}
	return r, CheckRate(r)
}

// CheckRate checks a rate in requests per second: finite and from MinRate to
// MaxRate. Zero is allowed (some settings take it as "unset" or "back to
// back"); callers that need a rate refuse it themselves.
func CheckRate(r float64) error {
	switch {
	case math.IsNaN(r) || math.IsInf(r, 0):
		return fmt.Errorf("rate %g: want a finite number of requests per second", r)
	case r < 0:
		return fmt.Errorf("rate %g: must be positive", r)
	case r != 0 && (r < MinRate || r > MaxRate):
		return fmt.Errorf("rate %g: want %g to %g requests per second", r, MinRate, MaxRate)
	}
	return nil
}
