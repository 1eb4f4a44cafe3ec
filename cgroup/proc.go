package cgroup

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// MountInfo is one line of /proc/PID/mountinfo, reduced to what cgroup lookup needs.
type MountInfo struct {
	// Root is the path inside the filesystem that is mounted (for cgroup mounts, the
	// cgroup the mount shows as its root, "/" on a host, a subtree in a container).
	Root string
	// MountPoint is where it is mounted.
	MountPoint string
	// FSType is "cgroup" (v1) or "cgroup2" for cgroup mounts.
	FSType string
	// SuperOptions are the filesystem's options; for v1 they name the controllers.
	SuperOptions []string
}

// ParseMountInfo parses the contents of /proc/PID/mountinfo.
func ParseMountInfo(r io.Reader) ([]MountInfo, error) {
	var out []MountInfo
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
		f := strings.Fields(sc.Text())
		sep := -1
		for i, s := range f {
			if s == "-" {
				sep = i
				break
			}
		}
		if sep < 6 || len(f) < sep+4 {
			return nil, fmt.Errorf("mountinfo line %d: malformed: %q", n, sc.Text())
		}
		out = append(out, MountInfo{
			Root:         unescapeMount(f[3]),
			MountPoint:   unescapeMount(f[4]),
			FSType:       f[sep+1],
			SuperOptions: strings.Split(f[sep+3], ","),
		})
	}
	return out, sc.Err()
}

// unescapeMount undoes the octal escapes (\040 for a space) of mountinfo paths.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			ok := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + byte(c-'0')
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ProcCgroup is one line of /proc/PID/cgroup.
type ProcCgroup struct {
	// HierarchyID is 0 for the v2 unified hierarchy.
	HierarchyID int
	// Controllers are the v1 controllers of the hierarchy (empty for v2; a named
	// hierarchy shows as "name=systemd").
	Controllers []string
	// Path is the cgroup's path relative to the hierarchy's root.
	Path string
}

// ParseProcCgroup parses the contents of /proc/PID/cgroup.
func ParseProcCgroup(r io.Reader) ([]ProcCgroup, error) {
	var out []ProcCgroup
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" {
			continue
		}
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("cgroup file line %d: malformed: %q", n, line)
		}
		var id int
		if _, err := fmt.Sscanf(f[0], "%d", &id); err != nil {
			return nil, fmt.Errorf("cgroup file line %d: hierarchy id %q: %w", n, f[0], err)
		}
		var ctrls []string
		if f[1] != "" {
			ctrls = strings.Split(f[1], ",")
		}
		out = append(out, ProcCgroup{HierarchyID: id, Controllers: ctrls, Path: f[2]})
	}
	return out, sc.Err()
}
