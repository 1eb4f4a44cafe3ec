package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
)

// fakeHost switches to every layout at once (or fails as told) and counts
// the restores, so that cgmode's decisions can be tested without touching the
// host.
type fakeHost struct {
	fail     map[cgrouptest.HostMode]error
	switched []cgrouptest.HostMode
	restored int
}

func (h *fakeHost) switchHost(ctx context.Context, m cgrouptest.HostMode) (func() error, error) {
	if err := h.fail[m]; err != nil {
		return nil, err
	}
	h.switched = append(h.switched, m)
	return func() error { h.restored++; return nil }, nil
}

var allModes = []cgrouptest.HostMode{cgrouptest.V2, cgrouptest.V2CPU, cgrouptest.V1Joined}

// A host whose kernel keeps the old hierarchy: CI passes, says so on marked
// lines at the end, and does not try the other layouts.
func TestHostThatCannotSwitch(t *testing.T) {
	fault := &cgrouptest.HostFault{Mode: cgrouptest.V2, WaitedFor: "the cpu controller to appear in /sys/fs/cgroup/unified/cgroup.controllers",
		Waited: time.Minute, Seen: []string{"cpu: hierarchy 1, 1 group, enabled"}}
	h := &fakeHost{fail: map[cgrouptest.HostMode]error{cgrouptest.V2: fault}}
	var log bytes.Buffer
	r := runner{switchHost: h.switchHost, inCI: true, log: &log, grace: time.Second}
	ran := filepath.Join(t.TempDir(), "ran")
	if code := r.run(context.Background(), allModes, []string{"touch", ran}); code != 0 {
		t.Fatalf("exit %d, want 0 on a host fault:\n%s", code, log.String())
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the command ran although no layout was made")
	}
	if len(h.switched) != 0 {
		t.Errorf("switched to %v after a host fault; want no further attempt", h.switched)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	tail := lines[len(lines)-3:]
	for i, m := range allModes {
		want := "cgmode: NOT RUN ON THIS HOST: " + string(m) + ": "
		if !strings.HasPrefix(tail[i], want) {
			t.Errorf("line %d from the end = %q, want it to start %q", 3-i, tail[i], want)
		}
	}
	if !strings.Contains(tail[0], "cpu: hierarchy 1, 1 group, enabled") || !strings.Contains(tail[0], "processes holding the old hierarchy: none found") {
		t.Errorf("the marked line does not say what was seen: %q", tail[0])
	}
}

// A layout that was made and whose tests fail fails cgmode, after the host
// was restored; the other layouts still run.
func TestLayoutWhoseTestsFail(t *testing.T) {
	h := &fakeHost{}
	var log bytes.Buffer
	r := runner{switchHost: h.switchHost, inCI: true, log: &log, grace: time.Second}
	// The command fails in the v2 layout only, as a broken v2 code path would.
	cmd := []string{"sh", "-c", `test "$THROTTLELAB_CGROUP_MODE" != v2`}
	if code := r.run(context.Background(), allModes, cmd); code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, log.String())
	}
	if h.restored != 3 || len(h.switched) != 3 {
		t.Errorf("switched %v, restored %d times: want every layout made and restored", h.switched, h.restored)
	}
	if !strings.Contains(log.String(), "FAILED in the v2 layout(s)") || strings.Contains(log.String(), "NOT RUN") {
		t.Errorf("log does not name the failed layout alone:\n%s", log.String())
	}
	// And passes when the command passes everywhere.
	log.Reset()
	if code := r.run(context.Background(), allModes, []string{"true"}); code != 0 {
		t.Fatalf("exit %d with a passing command:\n%s", code, log.String())
	}
}

// A host cgmode may not switch (not root, another layout) is a skip outside CI
// and a failure in CI.
func TestHostNotOursToSwitch(t *testing.T) {
	notRoot := fmt.Errorf("%w: needs root", cgrouptest.ErrCannotSwitch)
	for _, ci := range []bool{false, true} {
		h := &fakeHost{fail: map[cgrouptest.HostMode]error{cgrouptest.V2: notRoot, cgrouptest.V2CPU: notRoot, cgrouptest.V1Joined: notRoot}}
		var log bytes.Buffer
		r := runner{switchHost: h.switchHost, inCI: ci, log: &log, grace: time.Second}
		want := 0
		if ci {
			want = 1
		}
		if code := r.run(context.Background(), allModes, []string{"true"}); code != want {
			t.Errorf("CI=%v: exit %d, want %d:\n%s", ci, code, want, log.String())
		}
	}
}

// An interrupted switch ends at once with 130.
func TestInterruptedSwitch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var log bytes.Buffer
	r := runner{log: &log, grace: time.Second, switchHost: func(ctx context.Context, m cgrouptest.HostMode) (func() error, error) {
		cancel() // the signal arrives while the switch waits for the kernel
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	if code := r.run(ctx, allModes, []string{"true"}); code != 130 {
		t.Fatalf("exit %d, want 130:\n%s", code, log.String())
	}
}

// An interruption while the command runs reaches every process it started
// (its process group), and the host is restored.
func TestInterruptedCommand(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Interrupt once the command's grandchild exists.
		for {
			if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	h := &fakeHost{}
	var log bytes.Buffer
	r := runner{switchHost: h.switchHost, log: &log, grace: 5 * time.Second}
	// The sleep that sh starts in the background is not cgmode's child: only
	// signalling the process group ends it.
	cmd := []string{"sh", "-c", `sleep 120 & echo $! > ` + pidFile + `.tmp; mv ` + pidFile + `.tmp ` + pidFile + `; echo >> ` + pidFile + `; wait`}
	if code := r.run(ctx, allModes, cmd); code != 130 {
		t.Fatalf("exit %d, want 130:\n%s", code, log.String())
	}
	if h.restored != 1 {
		t.Errorf("restored %d times, want 1", h.restored)
	}
	b, _ := os.ReadFile(pidFile)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the command's background process %d outlived the interruption", pid)
	}
}

// alive reports whether pid runs (a zombie waiting for its reaper does not).
func alive(pid int) bool {
	for i := 0; i < 200; i++ { // the kernel delivers the signal asynchronously
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if errors.Is(err, os.ErrNotExist) {
			return false
		}
		if f := strings.Fields(string(b)); len(f) > 2 && (f[2] == "Z" || f[2] == "X") {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
