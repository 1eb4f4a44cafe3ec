package server

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
	// CPU is the CPU time the request's thread got.
	CPU time.Duration
	// Wall is the time from the request being read to the response being written.
	Wall time.Duration
}

// Stall returns Wall - Queue - CPU (at least 0): the time the request was runnable
// but not running, throttled or preempted.
func (t Timing) Stall() time.Duration { return max(0, t.Wall-t.Queue-t.CPU) }

// ParseTiming parses a Server-Timing header such as
// "queue;dur=0.012, cpu;dur=5.1, wall;dur=5.3" (durations in ms). Unknown metrics
// and parameters are ignored, as the standard asks; queue, cpu and wall must all
// be present.
func ParseTiming(h string) (Timing, error) {
	var t Timing
	seen := 0
	for _, metric := range strings.Split(h, ",") {
		params := strings.Split(strings.TrimSpace(metric), ";")
		var dst *time.Duration
		switch strings.TrimSpace(params[0]) {
		case "queue":
			dst = &t.Queue
		case "cpu":
			dst = &t.CPU
		case "wall":
			dst = &t.Wall
		default:
			continue
		}
		found := false
		for _, p := range params[1:] {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok || k != "dur" {
				continue
			}
			ms, err := strconv.ParseFloat(v, 64)
			if err != nil || ms < 0 {
				return Timing{}, fmt.Errorf("Server-Timing %q: %s dur=%q is not a duration in ms", h, params[0], v)
			}
			*dst = time.Duration(ms * float64(time.Millisecond))
			found = true
		}
		if !found {
			return Timing{}, fmt.Errorf("Server-Timing %q: %s has no dur", h, params[0])
		}
		seen++
	}
	if seen != 3 {
		return Timing{}, fmt.Errorf("Server-Timing %q: want queue, cpu and wall", h)
	}
	return t, nil
}
