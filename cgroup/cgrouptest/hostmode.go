//go:build linux

package cgrouptest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/throttlelab/throttlelab/cgroup"
)

// settle is how long to wait for the kernel to free a v1 hierarchy after its
// last unmount or to hand a controller to v2. Removed groups die lazily (a few
// seconds), and a detached hierarchy lives on while any process holds one of its
// files open: every Go >= 1.25 program started while it was mounted does, until
// it exits. In CI nothing else runs; on a busy machine it can take minutes.
const settle = 10 * time.Minute

// hostState is what SwitchHost needs to know of the host as found.
type hostState struct {
	unified string // the v2 mount point
	v1      map[string]string
}

// SwitchHost moves the controllers of this host from the v1-split layout into
// mode and returns a function that moves them back. It refuses (wrapping
// ErrCannotSwitch) unless the host is in the v1-split layout, the caller is
// root, and the v1 cpu, cpuacct and cpuset hierarchies hold no group but their
// root. restore removes any throttlelab test groups left under the v2 mount
// (killing their processes) before it moves the controllers back, and keeps
// trying for a few seconds while the kernel frees removed groups.
func SwitchHost(mode HostMode) (restore func() error, err error) {
	if !slices.Contains(HostModes, mode) {
		return nil, fmt.Errorf("cgroup host mode %q: want one of %v", mode, HostModes)
	}
	st, err := readHostState()
	if err != nil {
		return nil, err
	}
	if mode == V1Split {
		return func() error { return nil }, nil
	}
	restore = func() error { return st.restore(mode) }
	steps := []func() error{}
	switch mode {
	case V1Joined:
		steps = append(steps,
			func() error { return unmountAll(st.v1["cpu"], st.v1["cpuacct"]) },
			func() error { return mountV1(st.v1["cpu"], "cpu,cpuacct") })
	case V2CPU, V2:
		moved := []string{"cpu"}
		unmount := []string{st.v1["cpu"], st.v1["cpuacct"]}
		if mode == V2 {
			moved = append(moved, "cpuset")
			unmount = append(unmount, st.v1["cpuset"])
		}
		steps = append(steps,
			func() error { return unmountAll(unmount...) },
			func() error { return st.enableV2(moved) })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			if rerr := restore(); rerr != nil {
				err = fmt.Errorf("%w; restoring the host also failed: %v", err, rerr)
			}
			return nil, fmt.Errorf("switching the host to %s: %w", mode, err)
		}
	}
	return restore, nil
}

func readHostState() (*hostState, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: needs root", ErrCannotSwitch)
	}
	l, err := cgroup.ReadLayout("/")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCannotSwitch, err)
	}
	st := &hostState{v1: map[string]string{}}
	if l.Unified == nil || l.Unified.Root != "/" {
		return nil, fmt.Errorf("%w: no cgroup v2 mount of the whole hierarchy", ErrCannotSwitch)
	}
	st.unified = l.Unified.MountPoint
	for _, c := range []string{"cpu", "cpuacct", "cpuset"} {
		m, ok := l.V1[c]
		if !ok {
			return nil, fmt.Errorf("%w: the %s controller is not on its own v1 hierarchy (restore the host first: cgmode -restore)", ErrCannotSwitch, c)
		}
		if len(m.SuperOptions) > 0 && slices.Contains(m.SuperOptions, "cpu") && slices.Contains(m.SuperOptions, "cpuacct") {
			return nil, fmt.Errorf("%w: cpu and cpuacct are co-mounted at %s, not split", ErrCannotSwitch, m.MountPoint)
		}
		if m.Root != "/" {
			return nil, fmt.Errorf("%w: %s is mounted from a subtree (%s): this is a container", ErrCannotSwitch, m.MountPoint, m.Root)
		}
		if sub := subgroups(m.MountPoint); len(sub) > 0 {
			return nil, fmt.Errorf("%w: the v1 %s hierarchy holds groups (%s): moving the controller would leave them behind", ErrCannotSwitch, c, strings.Join(sub, ", "))
		}
		st.v1[c] = m.MountPoint
	}
	return st, nil
}

// subgroups lists the directories directly under a cgroup mount.
func subgroups(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// detached holds the devices of the v1 hierarchies unmounted last, to name
// the processes that keep them alive while the kernel is waited for.
var detached []uint64

// holders lists the processes with a file open on one of the detached
// hierarchies, as "PID (COMM)".
func holders() []string {
	var out []string
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		var st unix.Stat_t
		if unix.Stat(fd, &st) != nil || !slices.Contains(detached, st.Dev) {
			continue
		}
		pid := strings.Split(fd, "/")[2]
		comm, _ := os.ReadFile("/proc/" + pid + "/comm")
		h := pid + " (" + strings.TrimSpace(string(comm)) + ")"
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

func unmountAll(points ...string) error {
	detached = detached[:0]
	for _, p := range points {
		var st unix.Stat_t
		if unix.Stat(p, &st) == nil {
			detached = append(detached, st.Dev)
		}
		// Detached: any Go >= 1.25 program keeps its cgroup's cpu files open
		// (GOMAXPROCS follows the limit), which makes a plain unmount fail
		// with EBUSY. The hierarchy itself lives on until those files close;
		// enableV2 and mountV1 wait for that.
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("unmounting %s: %w", p, err)
		}
	}
	return nil
}

// mountV1 mounts a v1 hierarchy with the given controllers at point, retrying
// while the kernel still holds the hierarchy those controllers were bound to
// (EBUSY until its removed groups are freed).
func mountV1(point, controllers string) error {
	// The controllers may still be bound to a lingering hierarchy of another
	// combination (cpu,cpuacct after v1-joined): release it.
	lingering := controllers
	if controllers == "cpu" || controllers == "cpuacct" {
		lingering = "cpu,cpuacct"
	}
	return retry(func() error {
		return unix.Mount("cgroup", point, "cgroup", 0, controllers)
	}, func(err error) bool { return errors.Is(err, syscall.EBUSY) }, "mounting the v1 "+controllers+" hierarchy at "+point,
		func() { release(lingering) })
}

// release frees a v1 hierarchy that outlived its last unmount. The kernel
// destroys a hierarchy at its last unmount only if its root has no child at
// that moment, and groups removed just before are still children while they
// die; such a hierarchy then lingers, mounted nowhere, holding its
// controllers. Mounting the same controllers again attaches to it, and
// unmounting it once its children are gone destroys it.
func release(controllers string) {
	dir, err := os.MkdirTemp("", "cgmode-release-")
	if err != nil {
		return
	}
	defer os.Remove(dir)
	if unix.Mount("cgroup", dir, "cgroup", 0, controllers) != nil {
		return // no such hierarchy lingers (or it is mounted elsewhere)
	}
	if unix.Unmount(dir, 0) != nil {
		unix.Unmount(dir, unix.MNT_DETACH)
	}
}

// enableV2 waits until the v2 root offers the controllers (the kernel frees the
// unmounted v1 hierarchy lazily) and enables them in its subtree_control.
func (st *hostState) enableV2(ctrls []string) error {
	for _, c := range ctrls {
		c := c
		err := retry(func() error {
			b, err := os.ReadFile(filepath.Join(st.unified, "cgroup.controllers"))
			if err != nil {
				return err
			}
			if !slices.Contains(strings.Fields(string(b)), c) {
				return fmt.Errorf("the %s controller is not in %s/cgroup.controllers yet", c, st.unified)
			}
			return os.WriteFile(filepath.Join(st.unified, "cgroup.subtree_control"), []byte("+"+c), 0o644)
		}, func(error) bool { return true }, "enabling "+c+" on cgroup v2", func() { release(c) })
		if err != nil {
			return err
		}
	}
	return nil
}

// restore moves the controllers back from mode to the v1-split layout. Each step
// checks the mount table first, so it also finishes a restore that was cut short.
func (st *hostState) restore(mode HostMode) error {
	var errs []error
	if mode == V2CPU || mode == V2 {
		if err := removeTestGroups(st.unified); err != nil {
			errs = append(errs, err)
		}
		for _, c := range []string{"cpuset", "cpu"} {
			if err := disableV2(st.unified, c); err != nil {
				errs = append(errs, err)
			}
		}
	}
	l, err := cgroup.ReadLayout("/")
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if m, ok := l.V1["cpu"]; ok && slices.Contains(m.SuperOptions, "cpuacct") {
		if err := unmountAll(m.MountPoint); err != nil {
			errs = append(errs, err)
		}
		delete(l.V1, "cpu")
		delete(l.V1, "cpuacct")
	}
	for _, c := range []string{"cpu", "cpuacct", "cpuset"} {
		if _, ok := l.V1[c]; ok {
			continue
		}
		if err := mountV1(st.v1[c], c); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// disableV2 takes controller c out of the v2 root's subtree_control, retrying
// while removed groups that used it are still being freed.
func disableV2(unified, c string) error {
	return retry(func() error {
		b, err := os.ReadFile(filepath.Join(unified, "cgroup.subtree_control"))
		if err != nil {
			return err
		}
		if !slices.Contains(strings.Fields(string(b)), c) {
			return nil
		}
		return os.WriteFile(filepath.Join(unified, "cgroup.subtree_control"), []byte("-"+c), 0o644)
	}, func(err error) bool { return errors.Is(err, syscall.EBUSY) }, "disabling "+c+" on cgroup v2", nil)
}

// removeTestGroups removes what tests may have left under the v2 mount: the
// throttlelab tree and the throttlelab-test-* groups, killing their processes
// first. A failed test must not keep the host in the switched layout.
func removeTestGroups(unified string) error {
	var errs []error
	for _, top := range subgroups(unified) {
		base := filepath.Base(top)
		if base != "throttlelab" && !strings.HasPrefix(base, "throttlelab-test-") {
			continue
		}
		var dirs []string
		filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			d := dirs[i]
			if err := os.WriteFile(filepath.Join(d, "cgroup.kill"), []byte("1"), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			err := retry(func() error { return os.Remove(d) }, func(err error) bool { return errors.Is(err, syscall.EBUSY) }, "removing "+d, nil)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// retry calls f until it succeeds, f's error is not transient, or settle has
// passed: the kernel frees cgroup hierarchies and groups asynchronously, and
// there is no event to wait on. nudge, if not nil, is called every few
// seconds of failure to help the kernel along.
func retry(f func() error, transient func(error) bool, what string, nudge func()) error {
	start := time.Now()
	next := 10 * time.Second
	nextNudge := 3 * time.Second
	for {
		err := f()
		if err == nil {
			return nil
		}
		waited := time.Since(start)
		if !transient(err) || waited > settle {
			return fmt.Errorf("%s: %w", what, err)
		}
		if nudge != nil && waited > nextNudge {
			nudge()
			nextNudge = waited + 3*time.Second
		}
		if waited > next && Log != nil {
			fmt.Fprintf(Log, "still %s after %s (%v): waiting for the kernel to free the old hierarchy, which these processes hold open (Go programs do): %v\n", what, waited.Round(time.Second), err, holders())
			next += 30 * time.Second
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// RestoreHost brings a host that SwitchHost left in another layout (its caller
// was killed outright) back to v1-split. It does nothing on a host that is
// already in that layout.
func RestoreHost() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: needs root", ErrCannotSwitch)
	}
	l, err := cgroup.ReadLayout("/")
	if err != nil {
		return err
	}
	if l.Unified == nil {
		return fmt.Errorf("%w: no cgroup v2 mount", ErrCannotSwitch)
	}
	st := &hostState{unified: l.Unified.MountPoint, v1: map[string]string{}}
	for _, c := range []string{"cpu", "cpuacct", "cpuset"} {
		st.v1[c] = filepath.Join(filepath.Dir(l.Unified.MountPoint), c)
	}
	return st.restore(V2)
}
