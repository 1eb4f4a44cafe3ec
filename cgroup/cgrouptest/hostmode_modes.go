package cgrouptest

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// HostMode is one placement of the cpu, cpuacct and cpuset controllers that a
// test machine of this project can be switched to, so that the real-cgroup tests
// run on every layout users have.
type HostMode string

// The layouts SwitchHost can make, starting from the one this project's test
// machines boot with (Debian's hybrid: cpu, cpuacct and cpuset each on its own v1
// hierarchy, a v2 mount without controllers at /sys/fs/cgroup/unified).
const (
	// V1Split is the layout as found: cpu and cpuacct on separate v1 hierarchies.
	V1Split HostMode = "v1-split"
	// V1Joined co-mounts cpu and cpuacct on one v1 hierarchy, as most v1 distributions do.
	V1Joined HostMode = "v1-joined"
	// V2CPU moves cpu (and with it CPU accounting) to the v2 hierarchy and leaves
	// cpuset on v1: a hybrid host with the cpu controller on v2.
	V2CPU HostMode = "v2-cpu"
	// V2 moves cpu and cpuset to the v2 hierarchy: for everything throttlelab
	// touches, a pure cgroup v2 host (other v1 controllers stay where they are).
	V2 HostMode = "v2"
)

// HostModes are the modes SwitchHost knows, V1Split first.
var HostModes = []HostMode{V1Split, V1Joined, V2CPU, V2}

// ErrCannotSwitch means the host is not in the layout SwitchHost starts from,
// or not ours to change (not root, v1 groups that someone else made).
var ErrCannotSwitch = errors.New("cannot switch the cgroup layout of this host")

// Log receives what SwitchHost and RestoreHost are waiting for; nil is quiet.
var Log io.Writer

// HostFault is the error of a switch that the kernel did not let complete: it
// kept the unmounted v1 hierarchy alive (holding its controllers) for longer
// than SwitchHost waits. The cause is outside this project (a reference held
// where no process of this machine shows it is possible), so CI reports it on
// a line of its own instead of failing; the host has been restored.
type HostFault struct {
	// Mode is the layout that could not be made.
	Mode HostMode
	// WaitedFor says what the switch waited for.
	WaitedFor string
	// Waited is how long it waited.
	Waited time.Duration
	// Seen is what the kernel showed meanwhile: the controllers' rows of
	// /proc/cgroups ("cpu hierarchy 1, 1 group, enabled").
	Seen []string
	// Holders are the processes found with a file open on the old hierarchy.
	Holders []string
}

func (e *HostFault) Error() string {
	holders := "none found"
	if len(e.Holders) > 0 {
		holders = strings.Join(e.Holders, ", ")
	}
	return fmt.Sprintf("the host could not be switched to %s: waited %s for %s; /proc/cgroups: %s; processes holding the old hierarchy: %s",
		e.Mode, e.Waited.Round(time.Second), e.WaitedFor, strings.Join(e.Seen, "; "), holders)
}
