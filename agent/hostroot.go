package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// HostRoot returns the root to read the host under when its directories
// are mounted at dir (the DaemonSet mounts the host's /sys/fs/cgroup,
// /var/log/pods and /var/log/containers under /host) but not its /proc:
// the host's /proc would give away every process. The mount table top needs
// is then the agent's own, /proc/self/mountinfo, with the cgroup mounts
// under dir moved to where the host has them; HostRoot writes it under tmp
// beside links to dir's sys and var, and returns that directory. With
// dir/proc/self/mountinfo present (a full host root) it returns dir.
func HostRoot(dir, tmp string) (string, error) {
	if dir == "/" || dir == "" {
		return "/", nil
	}
	if _, err := os.Stat(filepath.Join(dir, "proc/self/mountinfo")); err == nil {
		return dir, nil
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("reading the agent's own mount table: %w", err)
	}
	return hostRootFrom(mi, dir, tmp)
}

func hostRootFrom(mountinfo []byte, dir, tmp string) (string, error) {
	dir = filepath.Clean(dir)
	prefix := dir + "/sys/fs/cgroup"
	var out bytes.Buffer
	for _, line := range strings.Split(string(mountinfo), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 {
			continue
		}
		mp := f[4]
		if mp != prefix && !strings.HasPrefix(mp, prefix+"/") {
			continue
		}
		// The mount shows the host's whole hierarchy (a bind of the host's
		// mount), whatever cgroup namespace the agent is in.
		f[3], f[4] = "/", strings.TrimPrefix(mp, dir)
		out.WriteString(strings.Join(f, " ") + "\n")
	}
	if out.Len() == 0 {
		return "", fmt.Errorf("no cgroup filesystem is mounted under %s: mount the host's /sys/fs/cgroup there (k8s render agent does)", prefix)
	}
	root := filepath.Join(tmp, "host-root")
	if err := os.MkdirAll(filepath.Join(root, "proc/self"), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(root, "proc/self/mountinfo"), out.Bytes(), 0o644); err != nil {
		return "", err
	}
	for _, d := range []string{"sys", "var"} {
		link := filepath.Join(root, d)
		if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if err := os.Symlink(filepath.Join(dir, d), link); err != nil {
			return "", err
		}
	}
	return root, nil
}

// ProcRoot is the root to read processes' /proc under, for dir (the
// agent's --root) and root (what HostRoot made of it): dir's own /proc
// when dir is a full host root, else the agent's own (HostRoot's root has
// a mount table and no processes). In the DaemonSet that is the agent's
// /proc: with hostPID (the chart's runtime.hostProc) the host's processes,
// with root, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH to read their binaries
// and environment;
// in a PID namespace of its own a group's cgroup.procs lists none of them
// (errHiddenPIDs).
func ProcRoot(dir, root string) string {
	if root == "/" || root == dir {
		return root
	}
	return "/"
}

// procRoot is the root a.cfg.ProcRoot names, else a.cfg.Root.
func (a *Agent) procRoot() string {
	if a.cfg.ProcRoot != "" {
		return a.cfg.ProcRoot
	}
	return a.cfg.Root
}

// hostProcHint is what to do when the host's processes cannot be read.
const hostProcHint = "run the agent in the host's PID namespace (the chart's runtime.hostProc=true; off by default)"

// errHiddenPIDs is a group whose cgroup.procs lists its processes as 0:
// they are outside the agent's PID namespace.
var errHiddenPIDs = errors.New("its processes are outside the agent's PID namespace: " + hostProcHint)
