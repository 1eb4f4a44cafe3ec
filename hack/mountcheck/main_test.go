package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/throttlelab/throttlelab/testenv"
)

// TestMain lets the tests run this test binary as mountcheck itself.
func TestMain(m *testing.M) {
	if os.Getenv("MOUNTCHECK_AS_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stderr))
	}
	os.Exit(m.Run())
}

// TestMountcheckReal runs mountcheck in a mount namespace of its own (the
// host's mounts are never touched): around a command that leaves the
// mounts alone it passes the command's exit code on; around one that mounts
// a tmpfs it fails and names the mount.
func TestMountcheckReal(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, "a mount namespace of its own needs root")
	}
	dir := t.TempDir()
	for _, tt := range []struct {
		name   string
		script string
		code   int
		says   string
	}{
		{"nothing mounted", "true", 0, "are the same"},
		{"nothing mounted, failing", "exit 3", 3, "are the same"},
		{"a tmpfs left mounted", "mount -t tmpfs mountcheck-test " + dir, 1, "+ "},
		{"a tmpfs mounted and unmounted", "mount -t tmpfs mountcheck-test " + dir + " && umount " + dir, 0, "are the same"},
	} {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(self, "sh", "-c", tt.script)
		cmd.Env = append(os.Environ(), "MOUNTCHECK_AS_MAIN=1")
		// Go makes the new namespace's mounts private, so nothing reaches the host.
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err = cmd.Run()
		code := cmd.ProcessState.ExitCode()
		if code != tt.code || !strings.Contains(stderr.String(), tt.says) {
			t.Errorf("%s: exit %d (%v), want %d; stderr:\n%s", tt.name, code, err, tt.code, stderr.String())
		}
		if tt.code == 1 && !strings.Contains(stderr.String(), " "+dir+" ") {
			t.Errorf("%s: the added mount is not named:\n%s", tt.name, stderr.String())
		}
	}
	if run(nil, &bytes.Buffer{}) != 2 {
		t.Error("no command: want exit 2")
	}
	// A snapshot taken earlier, with a mount the host does not have.
	snap := filepath.Join(dir, "mountinfo")
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	gone := "9999 1 0:999 / /mountcheck-gone rw - tmpfs mountcheck-gone rw"
	if err := os.WriteFile(snap, append(b, gone+"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := run([]string{"-before", snap, "true"}, &stderr); code != 1 || !strings.Contains(stderr.String(), "- "+gone) {
		t.Errorf("-before with a mount gone since: exit %d:\n%s", code, stderr.String())
	}
}
