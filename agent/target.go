package agent

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/units"
)

// ParseTarget reads a target as the metrics' target label shows it:
// "throttled=0.01" (a throttled share of periods, also "1%"),
// "delay=10ms" (a p99 added delay), or both joined by a comma.
func ParseTarget(s string) (NamedTarget, error) {
	t := NamedTarget{Name: s}
	if s == "" {
		return t, fmt.Errorf("empty target: give throttled=0.01, delay=10ms or both (throttled=0.05,delay=20ms)")
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		switch {
		case !ok:
			return t, fmt.Errorf("target %q: %q is not KEY=VALUE: give throttled=0.01 or delay=10ms", s, part)
		case k == "throttled":
			pct := strings.HasSuffix(v, "%")
			f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
			if pct {
				f /= 100
			}
			if err != nil || !(f > 0 && f < 1) {
				return t, fmt.Errorf("target %q: throttled=%s: give a share between 0 and 1 (0.01 or 1%%)", s, v)
			}
			t.MaxThrottled = f
		case k == "delay":
			d, err := units.ParseDuration(v)
			if err != nil || d <= 0 || d > time.Minute {
				return t, fmt.Errorf("target %q: delay=%s: give a duration up to 1m (10ms)", s, v)
			}
			t.MaxDelay = d
		default:
			return t, fmt.Errorf("target %q: unknown key %q: give throttled= or delay=", s, k)
		}
	}
	t.Target = t.Target.WithDefaults()
	return t, nil
}

// TargetName writes t as ParseTarget reads it and the metrics' target label
// shows it: "throttled=0.05", "delay=10ms" or both joined by a comma.
func TargetName(t advise.Target) string {
	var parts []string
	if t.MaxThrottled > 0 && t.MaxThrottled < 1 {
		parts = append(parts, "throttled="+strconv.FormatFloat(t.MaxThrottled, 'g', -1, 64))
	}
	if t.MaxDelay > 0 {
		parts = append(parts, "delay="+t.MaxDelay.String())
	}
	return strings.Join(parts, ",")
}
