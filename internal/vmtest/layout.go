package vmtest

import (
	"fmt"
	"strings"
)

// Layout is a cgroup layout the guest's init mounts before the tests run.
type Layout struct {
	// Name is used in flags, tables and THROTTLELAB_VM: "v2".
	Name string
	// Doc says what it is, for the table's legend.
	Doc string
	// mount is the guest shell that mounts it under /sys/fs/cgroup.
	mount string
}

// v1Others mounts the v1 controllers every v1 and hybrid layout has besides
// the CPU ones, and the v2 hierarchy at unified/, as systemd's hybrid mode
// does (and this project's reference host).
const v1Others = `for c in cpuset memory pids; do mkdir /sys/fs/cgroup/$c && mount -t cgroup -o $c cgroup /sys/fs/cgroup/$c; done
mkdir /sys/fs/cgroup/unified && mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified
`

// The layouts of the matrix.
var (
	// V2 is pure cgroup v2, systemd's default and most nodes'.
	V2 = Layout{Name: "v2", Doc: "pure cgroup v2", mount: `mount -t cgroup2 cgroup2 /sys/fs/cgroup
`}
	// V1 has cpu and cpuacct on v1 hierarchies of their own.
	V1 = Layout{Name: "v1", Doc: "v1, cpu and cpuacct apart", mount: `mount -t tmpfs cgroup /sys/fs/cgroup
for c in cpu cpuacct; do mkdir /sys/fs/cgroup/$c && mount -t cgroup -o $c cgroup /sys/fs/cgroup/$c; done
` + v1Others}
	// V1Joined has cpu and cpuacct on one v1 hierarchy, with the symlinks
	// systemd makes.
	V1Joined = Layout{Name: "v1-joined", Doc: "v1, cpu and cpuacct joined", mount: `mount -t tmpfs cgroup /sys/fs/cgroup
mkdir /sys/fs/cgroup/cpu,cpuacct && mount -t cgroup -o cpu,cpuacct cgroup /sys/fs/cgroup/cpu,cpuacct
ln -s cpu,cpuacct /sys/fs/cgroup/cpu && ln -s cpu,cpuacct /sys/fs/cgroup/cpuacct
` + v1Others}
	// Hybrid leaves the cpu controller on the v2 hierarchy, cpuacct and the
	// rest on v1.
	Hybrid = Layout{Name: "hybrid", Doc: "hybrid, cpu on v2 (unified/), cpuacct on v1", mount: `mount -t tmpfs cgroup /sys/fs/cgroup
mkdir /sys/fs/cgroup/cpuacct && mount -t cgroup -o cpuacct cgroup /sys/fs/cgroup/cpuacct
` + v1Others}
)

// Layouts are every layout of the matrix, in the table's order.
var Layouts = []Layout{V2, V1, V1Joined, Hybrid}

// FindLayout returns the layout of the given name from ls.
func FindLayout(ls []Layout, name string) (Layout, error) {
	var names []string
	for _, l := range ls {
		if l.Name == name {
			return l, nil
		}
		names = append(names, l.Name)
	}
	return Layout{}, fmt.Errorf("layout %q: not in the matrix (one of %s)", name, strings.Join(names, ", "))
}
