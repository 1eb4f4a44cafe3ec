package units

import (
	"fmt"
	"strings"
	"time"
)

// ParseDuration parses a duration as Go writes it ("100ms", "1.5s", "2m30s",
// "250us"; "0" needs no unit). Its errors quote the value and say what is
// wanted; the bounds belong to each setting (see CheckDuration).
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: want a number with a unit, such as 100ms or 5s (at most 2562047h)", s)
	}
	return d, nil
}

// CheckDuration checks that d lies in [lo, hi], and says so in the units a
// user writes: "period -100ms: want 1ms to 1s".
func CheckDuration(what string, d, lo, hi time.Duration) error {
	if d < lo || d > hi {
		return fmt.Errorf("%s %s: want %s to %s", what, d, short(lo), short(hi))
	}
	return nil
}

// short writes a bound without trailing zero units: 1h, not 1h0m0s.
func short(d time.Duration) string {
	s := d.String()
	for _, z := range []string{"0s", "0m"} {
		if len(s) > len(z) && strings.HasSuffix(s, z) && s[len(s)-len(z)-1] >= 'a' {
			s = s[:len(s)-len(z)]
		}
	}
	return s
}
