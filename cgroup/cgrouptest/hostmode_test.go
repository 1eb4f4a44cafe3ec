//go:build linux

package cgrouptest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeV2 makes a v2 root whose cgroup.controllers offers ctrls, and a
// /proc/cgroups in which cpu is still on v1 hierarchy 1.
func fakeV2(t *testing.T, ctrls string) *hostState {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte(ctrls+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pc := filepath.Join(dir, "proc-cgroups")
	os.WriteFile(pc, []byte("#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpuset\t0\t3\t1\ncpu\t1\t1\t1\ncpuacct\t0\t3\t1\n"), 0o644)
	old := []any{switchSettle, nudgeEvery, procCgroups}
	switchSettle, nudgeEvery, procCgroups = 300*time.Millisecond, 0, pc
	t.Cleanup(func() {
		switchSettle, nudgeEvery, procCgroups = old[0].(time.Duration), old[1].(time.Duration), old[2].(string)
	})
	return &hostState{unified: dir, mode: V2}
}

// The kernel never frees the v1 cpu hierarchy: the switch gives up after
// switchSettle with a HostFault that says what it waited for and saw.
func TestSwitchGivesUpOnStuckHierarchy(t *testing.T) {
	st := fakeV2(t, "cpuset")
	nudged := 0
	st.release = func(c string) { nudged++ }
	err := st.enableV2(context.Background(), []string{"cpuset", "cpu"})
	var fault *HostFault
	if !errors.As(err, &fault) {
		t.Fatalf("enableV2 = %v, want a *HostFault", err)
	}
	msg := fault.Error()
	for _, want := range []string{"could not be switched to v2", "the cpu controller to appear in " + st.unified + "/cgroup.controllers", "cpu: hierarchy 1, 1 group, enabled", "none found"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the fault %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("the fault is not one line: %q", msg)
	}
	if nudged == 0 {
		t.Error("the switch never tried to release the lingering hierarchy")
	}
	if fault.Waited < switchSettle {
		t.Errorf("gave up after %s, before the %s it should wait", fault.Waited, switchSettle)
	}
	b, _ := os.ReadFile(filepath.Join(st.unified, "cgroup.subtree_control"))
	if string(b) != "+cpuset" {
		t.Errorf("subtree_control = %q, want only cpuset enabled", b)
	}
}

// A hierarchy freed while the switch waits (here: by the release) lets it
// complete.
func TestSwitchCompletesWhenFreed(t *testing.T) {
	st := fakeV2(t, "cpuset")
	switchSettle = time.Minute
	st.release = func(c string) {
		os.WriteFile(filepath.Join(st.unified, "cgroup.controllers"), []byte("cpuset cpu\n"), 0o644)
	}
	if err := st.enableV2(context.Background(), []string{"cpu"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(st.unified, "cgroup.subtree_control"))
	if string(b) != "+cpu" {
		t.Errorf("subtree_control = %q, want +cpu", b)
	}
}

// A signal (ctx ending) stops the wait at once, and is not a host fault.
func TestSwitchInterrupted(t *testing.T) {
	st := fakeV2(t, "cpuset")
	switchSettle = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	st.release = func(string) { cancel() }
	err := st.enableV2(ctx, []string{"cpu"})
	var fault *HostFault
	if !errors.Is(err, context.Canceled) || errors.As(err, &fault) {
		t.Fatalf("enableV2 = %v, want an interruption, not a fault", err)
	}
}

// A restore that cannot complete is a failure, never excused as a host fault.
func TestRestoreTimeoutIsNotAFault(t *testing.T) {
	st := fakeV2(t, "cpuset")
	err := st.fault(&timeoutError{what: "x", waited: time.Minute, last: errors.New("EBUSY")}, "y", []string{"cpu"})
	var fault *HostFault
	if !errors.As(err, &fault) {
		t.Fatalf("while switching: %v, want a fault", err)
	}
	st.mode = ""
	if err := st.fault(&timeoutError{what: "x", waited: time.Minute, last: errors.New("EBUSY")}, "y", []string{"cpu"}); errors.As(err, &fault) {
		t.Fatalf("while restoring: %v, want no fault", err)
	}
}
