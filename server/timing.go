package server

import "github.com/throttlelab/throttlelab/servertiming"

// Timing is what a work response's Server-Timing header says about where its
// time went (see servertiming.Timing).
type Timing = servertiming.Timing

// ParseTiming parses a Server-Timing header (see servertiming.Parse).
func ParseTiming(h string) (Timing, error) { return servertiming.Parse(h) }
