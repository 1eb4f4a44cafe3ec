//go:build !linux

package loadgen

import (
	"context"
	"time"
)

// sleepPrecise has no timerfd outside Linux: the caller falls back to a
// time.Timer, which the Go runtime may fire up to a millisecond late.
func sleepPrecise(ctx context.Context, t time.Time) (bool, error) { return false, nil }
