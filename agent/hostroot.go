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
