package runtimes

import (
	"bytes"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// reader reads one process's files under root/proc/PID.
type reader struct {
	root string
	pid  int
}

// procInfo is what every runtime's inspection starts from.
type procInfo struct {
	args   []string
	env    map[string]string
	exe    string // as the process sees it (the target of /proc/PID/exe)
	cpus   int
	layout string
}

func (r reader) path(name string) string {
	return filepath.Join(r.root, "proc", strconv.Itoa(r.pid), name)
}

// inRoot is a path as the process sees it (in its mount namespace),
// reached through /proc/PID/root.
func (r reader) inRoot(p string) string { return filepath.Join(r.path("root"), p) }

func (r reader) file(name string) ([]byte, error) {
	b, err := os.ReadFile(r.path(name))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", r.path(name), err)
	}
	return b, nil
}

func (r reader) read() (procInfo, error) {
	var in procInfo
	b, err := r.file("cmdline")
	if err != nil {
		return in, err
	}
	in.args = parseCmdline(b)
	if len(in.args) == 0 {
		// A kernel thread, or a process exiting (its memory already gone).
		if _, err := os.Stat(r.path("exe")); err != nil {
			return in, fmt.Errorf("reading %s: %w", r.path("exe"), err)
		}
	}
	if b, err = r.file("environ"); err != nil {
		return in, err
	}
	in.env = parseEnviron(b)
	if in.exe, err = os.Readlink(r.path("exe")); err != nil {
		return in, fmt.Errorf("reading %s: %w", r.path("exe"), err)
	}
	if b, err = r.file("status"); err != nil {
		return in, err
	}
	if in.cpus, err = parseStatusCPUs(b); err != nil {
		return in, fmt.Errorf("%s: %w", r.path("status"), err)
	}
	if b, err = r.file("cgroup"); err != nil {
		return in, err
	}
	if in.layout, err = parseCPULayout(b); err != nil {
		return in, fmt.Errorf("%s: %w", r.path("cgroup"), err)
	}
	return in, nil
}

// gone reports whether err means the process exited: its /proc directory
// vanished (ENOENT) or its memory is gone (ESRCH on environ, cmdline).
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

func (r reader) warn(err error) *Warning {
	if gone(err) {
		return &Warning{PID: r.pid, Why: "process exited while read: " + err.Error(), Err: err}
	}
	return &Warning{PID: r.pid, Why: "/proc unreadable, runtime unknown: " + err.Error(), Err: err}
}

// buildInfo reads the Go build information of the process's binary
// through /proc/PID/exe, which opens the binary the process runs even
// when it lives in another mount namespace or was replaced on disk.
func (r reader) buildInfo() (*buildinfo.BuildInfo, error) {
	return buildinfo.ReadFile(r.path("exe"))
}

// hasCoreCLR reports whether the process mapped .NET's runtime library:
// how a self-contained .NET application, whose binary bears its own
// name, is known.
func (r reader) hasCoreCLR() bool {
	_, ok := r.coreCLR()
	return ok
}

// coreCLR returns the path of libcoreclr.so the process mapped.
func (r reader) coreCLR() (string, bool) {
	b, err := os.ReadFile(r.path("maps"))
	if err != nil {
		return "", false
	}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if bytes.HasSuffix(line, []byte("/libcoreclr.so")) {
			f := bytes.Fields(line)
			return string(f[len(f)-1]), true
		}
	}
	return "", false
}
