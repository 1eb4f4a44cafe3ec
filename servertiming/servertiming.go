package servertiming

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Timing is what a work response's Server-Timing header says about where its time
// went.
type Timing struct {
	// Queue is the time the request waited for a worker.
	Queue time.Duration
	// CPU is the CPU time the request's thread got, or -1 if the server did not
	// measure it (serve --cpu-clock=false).
	CPU time.Duration
	// Wall is the time from the request being read to the response being written.
	Wall time.Duration
}

// Stall returns Wall - Queue - CPU (at least 0): the time the request was runnable
// but not running, throttled or preempted. It is -1 when CPU was not measured.
func (t Timing) Stall() time.Duration {
	if t.CPU < 0 {
		return -1
	}
	return max(0, t.Wall-t.Queue-t.CPU)
}

// Parse parses a Server-Timing header such as
// "queue;dur=0.012, cpu;dur=5.1, wall;dur=5.3" (durations in ms). Unknown metrics
// and parameters are ignored, as the standard asks; queue and wall must be
// present, and a missing cpu gives CPU = -1. The load generator parses one per
// response, so it scans the string without allocating.
func Parse(h string) (Timing, error) {
	t := Timing{CPU: -1}
	var seenQueue, seenWall bool
	for rest := h; rest != ""; {
		metric, next, _ := strings.Cut(rest, ",")
		rest = next
		name, params, _ := strings.Cut(metric, ";")
		var dst *time.Duration
		switch strings.TrimSpace(name) {
		case "queue":
			dst, seenQueue = &t.Queue, true
		case "cpu":
			dst = &t.CPU
		case "wall":
			dst, seenWall = &t.Wall, true
		default:
			continue
		}
		found := false
		for params != "" {
			var p string
			p, params, _ = strings.Cut(params, ";")
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok || k != "dur" {
				continue
			}
			ms, err := strconv.ParseFloat(v, 64)
			if err != nil || ms < 0 {
				return Timing{}, fmt.Errorf("Server-Timing %q: %s dur=%q is not a duration in ms", h, strings.TrimSpace(name), v)
			}
			*dst = time.Duration(ms * float64(time.Millisecond))
			found = true
		}
		if !found {
			return Timing{}, fmt.Errorf("Server-Timing %q: %s has no dur", h, strings.TrimSpace(name))
		}
	}
	if !seenQueue || !seenWall {
		return Timing{}, fmt.Errorf("Server-Timing %q: want queue and wall (and cpu)", h)
	}
	return t, nil
}
