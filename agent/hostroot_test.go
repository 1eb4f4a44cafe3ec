package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/watch"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// TestHostRoot lays a fake host's tree under /host as the DaemonSet mounts
// it (no /proc), with the agent's own mount table showing the cgroup mounts
// under /host in a cgroup namespace, and checks that top finds the host's
// containers through HostRoot.
func TestHostRoot(t *testing.T) {
	for _, tree := range []string{"v2-kubepods-systemd", "v1-joined-kubepods-cgroupfs"} {
		t.Run(tree, func(t *testing.T) {
			host := watchtest.FakeRoot(t, tree)
			real, err := os.ReadFile(filepath.Join(host, "proc/self/mountinfo"))
			if err != nil {
				t.Fatal(err)
			}
			os.RemoveAll(filepath.Join(host, "proc"))
			// The agent's table: its own root, a container cgroup mount, and
			// the host's mounts moved under /host with a namespaced root.
			own := "1 0 0:1 / / rw - overlay overlay rw\n2 1 0:2 / /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n"
			for _, l := range strings.Split(strings.TrimSpace(string(real)), "\n") {
				f := strings.Fields(l)
				f[3], f[4] = "/../../..", host+f[4]
				own += strings.Join(f, " ") + "\n"
			}
			root, err := hostRootFrom([]byte(own), host, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			w, err := watch.New(watch.Options{Root: root})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			w.Sample(0)
			w.Sample(time.Second)
			var pods []string
			for _, s := range w.Report() {
				if s.Kind == watch.KindContainer && s.Pod != "" {
					pods = append(pods, s.Namespace+"/"+s.Pod+"/"+s.Container)
				}
			}
			if len(pods) == 0 {
				t.Fatalf("no named containers found through %s", root)
			}
		})
	}
	if _, err := hostRootFrom([]byte("1 0 0:1 / / rw - overlay overlay rw\n"), "/host", t.TempDir()); err == nil || !strings.Contains(err.Error(), "/host/sys/fs/cgroup") {
		t.Fatalf("no cgroup mount under /host: %v", err)
	}
}

// TestProcRoot: processes are read under a full host root's own /proc,
// else under the agent's (HostRoot's made root has none).
func TestProcRoot(t *testing.T) {
	for _, c := range []struct{ dir, root, want string }{
		{"/", "/", "/"},
		{"/host", "/host", "/host"},
		{"/host", "/tmp/host-root", "/"},
	} {
		if got := ProcRoot(c.dir, c.root); got != c.want {
			t.Errorf("ProcRoot(%q, %q) = %q, want %q", c.dir, c.root, got, c.want)
		}
	}
}
