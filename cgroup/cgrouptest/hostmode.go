//go:build linux

package cgrouptest

import (
	"context"
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

// How long to wait for the kernel, which frees removed groups and unmounted v1
// hierarchies lazily, with no event to wait on. Removed groups die within a few
// seconds; a detached hierarchy lives on while a process holds one of its files
// open (every Go >= 1.25 program started while it was mounted does, until it
// exits). On some hosts the kernel keeps it alive with no holder visible at all:
// then no wait helps, so a switch gives up after switchSettle (and says what it
// saw) instead of blocking CI. Restoring only mounts and unmounts, which the
// kernel allows at once unless groups are still dying.
var (
	switchSettle  = time.Minute
	restoreSettle = 2 * time.Minute
	// nudgeEvery is how often a waiting step calls its nudge.
	nudgeEvery = 3 * time.Second
	// procCgroups is the kernel's table of controllers and their hierarchies.
	procCgroups = "/proc/cgroups"
)

// hostState is what SwitchHost needs to know of the host as found.
type hostState struct {
	unified string // the v2 mount point
	v1      map[string]string
	mode    HostMode // the layout being made
	// release frees a lingering v1 hierarchy of these controllers (nil: the
	// real release; tests of a fake tree replace it).
	release func(controllers string)
}

// SwitchHost moves the controllers of this host from the v1-split layout into
// mode and returns a function that moves them back. It refuses (wrapping
// ErrCannotSwitch) unless the host is in the v1-split layout, the caller is
// root, and the v1 cpu, cpuacct and cpuset hierarchies hold no group but their
// root. When the kernel does not free the old hierarchy within about a minute
// it gives up with a *HostFault; when ctx ends (a signal) it stops waiting at
// once. Either way it restores the host before it returns the error. restore
// removes any throttlelab test groups left under the v2 mount (killing their
// processes) before it moves the controllers back, and keeps trying for a
// bounded time while the kernel frees removed groups.
func SwitchHost(ctx context.Context, mode HostMode) (restore func() error, err error) {
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
	st.mode = mode
	restore = func() error { return st.restore(mode) }
	steps := []func() error{}
	switch mode {
	case V1Joined:
		steps = append(steps,
			func() error { return unmountAll(st.v1["cpu"], st.v1["cpuacct"]) },
			func() error { return st.mountV1(ctx, switchSettle, st.v1["cpu"], "cpu,cpuacct") })
	case V2CPU, V2:
		moved := []string{"cpu"}
		unmount := []string{st.v1["cpu"], st.v1["cpuacct"]}
		if mode == V2 {
			moved = append(moved, "cpuset")
			unmount = append(unmount, st.v1["cpuset"])
		}
		steps = append(steps,
			func() error { return unmountAll(unmount...) },
			func() error { return st.enableV2(ctx, moved) })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			if rerr := restore(); rerr != nil {
				return nil, fmt.Errorf("switching the host to %s: %w; restoring the host also failed: %v (run: cgmode -restore)", mode, err, rerr)
			}
			var fault *HostFault
			if errors.As(err, &fault) {
				return nil, err
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
// for up to limit while the kernel still holds the hierarchy those controllers
// were bound to (EBUSY until its removed groups are freed). While switching, a
// hierarchy the kernel never frees is a *HostFault.
func (st *hostState) mountV1(ctx context.Context, limit time.Duration, point, controllers string) error {
	// The controllers may still be bound to a lingering hierarchy of another
	// combination (cpu,cpuacct after v1-joined): release it.
	lingering := controllers
	if controllers == "cpu" || controllers == "cpuacct" {
		lingering = "cpu,cpuacct"
	}
	what := "mounting the v1 " + controllers + " hierarchy at " + point
	err := retry(ctx, limit, func() error {
		return unix.Mount("cgroup", point, "cgroup", 0, controllers)
	}, func(err error) bool { return errors.Is(err, syscall.EBUSY) }, what,
		func() { st.releaseFn()(lingering) })
	return st.fault(err, "the kernel to free the old hierarchy of "+controllers+" (mount gave EBUSY)", strings.Split(controllers, ","))
}

// fault turns a retry that ran out of time while switching into a *HostFault
// that says what the kernel showed; other errors pass unchanged.
func (st *hostState) fault(err error, waitedFor string, ctrls []string) error {
	var tmo *timeoutError
	if !errors.As(err, &tmo) || st.mode == "" {
		return err
	}
	return &HostFault{Mode: st.mode, WaitedFor: waitedFor, Waited: tmo.waited, Seen: cgroupRows(procCgroups, ctrls), Holders: holders()}
}

func (st *hostState) releaseFn() func(string) {
	if st.release != nil {
		return st.release
	}
	return release
}

// cgroupRows describes the controllers' rows of /proc/cgroups (file), as
// "cpu: hierarchy 1, 1 group, enabled".
func cgroupRows(file string, ctrls []string) []string {
	b, err := os.ReadFile(file)
	if err != nil {
		return []string{"unreadable (" + err.Error() + ")"}
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || !slices.Contains(ctrls, f[0]) {
			continue
		}
		hier := "hierarchy " + f[1]
		if f[1] == "0" {
			hier = "on v2 or unbound"
		}
		groups := f[2] + " groups"
		if f[2] == "1" {
			groups = "1 group"
		}
		enabled := "enabled"
		if f[3] != "1" {
			enabled = "disabled"
		}
		out = append(out, f[0]+": "+hier+", "+groups+", "+enabled)
	}
	if len(out) == 0 {
		return []string{"no row for " + strings.Join(ctrls, ",")}
	}
	return out
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
// unmounted v1 hierarchy lazily) and enables them in its subtree_control. A
// controller that does not appear within switchSettle is a *HostFault.
func (st *hostState) enableV2(ctx context.Context, ctrls []string) error {
	for _, c := range ctrls {
		c := c
		controllers := filepath.Join(st.unified, "cgroup.controllers")
		err := retry(ctx, switchSettle, func() error {
			b, err := os.ReadFile(controllers)
			if err != nil {
				return err
			}
			if !slices.Contains(strings.Fields(string(b)), c) {
				return fmt.Errorf("the %s controller is not in %s yet", c, controllers)
			}
			return os.WriteFile(filepath.Join(st.unified, "cgroup.subtree_control"), []byte("+"+c), 0o644)
		}, func(error) bool { return true }, "enabling "+c+" on cgroup v2", func() { st.releaseFn()(c) })
		if err != nil {
			return st.fault(err, "the "+c+" controller to appear in "+controllers, []string{c})
		}
	}
	return nil
}

// restore moves the controllers back from mode to the v1-split layout. Each step
// checks the mount table first, so it also finishes a restore that was cut short.
func (st *hostState) restore(mode HostMode) error {
	// A restore that cannot complete is not the host's fault to excuse: it is
	// a failure (the host is not as found), never a *HostFault.
	st = &hostState{unified: st.unified, v1: st.v1, release: st.release}
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
		if err := st.mountV1(context.Background(), restoreSettle, st.v1[c], c); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// disableV2 takes controller c out of the v2 root's subtree_control, retrying
// while removed groups that used it are still being freed.
func disableV2(unified, c string) error {
	return retry(context.Background(), restoreSettle, func() error {
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
			err := retry(context.Background(), restoreSettle, func() error { return os.Remove(d) }, func(err error) bool { return errors.Is(err, syscall.EBUSY) }, "removing "+d, nil)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// timeoutError is a retry that ran out of time.
type timeoutError struct {
	what   string
	waited time.Duration
	last   error
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("%s: gave up after %s: %v", e.what, e.waited.Round(time.Second), e.last)
}

func (e *timeoutError) Unwrap() error { return e.last }

// retry calls f until it succeeds, f's error is not transient, limit has
// passed (a *timeoutError) or ctx ends: the kernel frees cgroup hierarchies
// and groups asynchronously, and there is no event to wait on. nudge, if not
// nil, is called every nudgeEvery of failure to help the kernel along.
func retry(ctx context.Context, limit time.Duration, f func() error, transient func(error) bool, what string, nudge func()) error {
	start := time.Now()
	next := 10 * time.Second
	nextNudge := nudgeEvery
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := f()
		if err == nil {
			return nil
		}
		waited := time.Since(start)
		if !transient(err) {
			return fmt.Errorf("%s: %w", what, err)
		}
		if waited > limit {
			return &timeoutError{what: what, waited: waited, last: err}
		}
		if nudge != nil && waited >= nextNudge {
			nudge()
			nextNudge = waited + nudgeEvery
		}
		if waited > next && Log != nil {
			h := strings.Join(holders(), ", ")
			if h == "" {
				h = "none found"
			}
			fmt.Fprintf(Log, "still %s after %s (%v); processes holding the old hierarchy: %s; giving up after %s\n", what, waited.Round(time.Second), err, h, limit)
			next += 20 * time.Second
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: interrupted: %w", what, ctx.Err())
		case <-tick.C:
		}
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
