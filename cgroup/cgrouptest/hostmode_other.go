//go:build !linux

package cgrouptest

import "context"

// SwitchHost needs Linux's cgroups and mounts: elsewhere it refuses.
func SwitchHost(ctx context.Context, mode HostMode) (restore func() error, err error) {
	return nil, ErrCannotSwitch
}

// RestoreHost has nothing to restore off Linux.
func RestoreHost() error { return nil }
