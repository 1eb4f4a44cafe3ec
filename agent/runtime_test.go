package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/schemas/schematest"
)

// startChild starts a real process that waits on its standard input (a Go
// binary, gofmt, when env sets GOMAXPROCS; else sleep) and ends it at the
// test's end.
func startChild(t testing.TB, name string, env ...string) int {
	t.Helper()
	var cmd *exec.Cmd
	if name == "gofmt" {
		goroot, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			t.Fatalf("go env GOROOT: %v", err)
		}
		cmd = exec.Command(filepath.Join(strings.TrimSpace(string(goroot)), "bin", "gofmt"))
		if _, err := cmd.StdinPipe(); err != nil { // gofmt reads it until the test ends
			t.Fatal(err)
		}
	} else {
		cmd = exec.Command("sleep", "600")
	}
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// TestAgentReadsRuntimeAtDiscoveryAndOnExec puts a real Go process (gofmt,
// GOMAXPROCS=3) in a fake container's group, its /proc entry linked under
// the fake root: /advice and /metrics name its runtime and parallelism.
// The same pid then links to another binary (what an exec does), and the
// next report reads it again: the runtime is gone, with the reason.
func TestAgentReadsRuntimeAtDiscoveryAndOnExec(t *testing.T) {
	n, group, goPID, sleepPID := goInFakeContainer(t)
	n.run(8 * time.Second)
	h := n.a.Handler()
	v := viewOfGroup(t, n, group)
	r := v.Runtime
	if r == nil {
		t.Fatalf("no runtime in /advice for %s: %q", v.Cgroup, v.RuntimeWhy)
	}
	if r.Runtime != "go" || r.Setting != "GOMAXPROCS" || !r.Set || r.Found != 3 {
		t.Errorf("runtime %+v, want go with GOMAXPROCS=3 set", *r)
	}
	if v.Advice == nil || v.Advice.Runtime == nil || v.Advice.Runtime.Now != 3 {
		t.Fatalf("the advice's runtime object is missing or wrong: %+v", v.Advice)
	}
	if r.Recommended < 1 || r.RecommendedSetting != "GOMAXPROCS="+strconv.Itoa(r.Recommended) {
		t.Errorf("recommended %d spelled %q", r.Recommended, r.RecommendedSetting)
	}
	_, body := get(t, h, "/advice")
	schematest.Check(t, "/advice with a runtime", []byte(body))
	_, metrics := get(t, h, "/metrics")
	for _, want := range []string{`throttlelab_runtime_info{`, `runtime="go"`, `setting="GOMAXPROCS"`, `set="true"`, `value="found"} 3`, `value="recommended"} ` + strconv.Itoa(r.Recommended)} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}

	// An exec: the same pid, another binary.
	link := filepath.Join(n.root, "proc", strconv.Itoa(goPID))
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/proc/"+strconv.Itoa(sleepPID), link); err != nil {
		t.Fatal(err)
	}
	n.run(time.Second)
	v = viewOfGroup(t, n, group)
	if v.Runtime != nil || !strings.Contains(v.RuntimeWhy, "runtime unknown") {
		t.Errorf("after the exec: runtime %+v, why %q; want none, and why naming the unknown runtime", v.Runtime, v.RuntimeWhy)
	}
	if _, metrics := get(t, h, "/metrics"); strings.Contains(metrics, "throttlelab_runtime_info{") {
		t.Error("/metrics still has throttlelab_runtime_info after the exec to an unknown binary")
	}
}

// TestAgentRuntimeReadAfterUseOnly: a container whose usage did not move
// since the last report has its runtime kept without reading its
// cgroup.procs (no process of it ran, so none exec'd): the fake's "exec"
// (its pid's /proc link to another binary) is not seen while its counter
// stands still, and is at the first report after it moves.
func TestAgentRuntimeReadAfterUseOnly(t *testing.T) {
	n, group, goPID, sleepPID := goInFakeContainer(t)
	n.run(2 * time.Second)
	if r := viewOfGroup(t, n, group).Runtime; r == nil || r.Runtime != "go" {
		t.Fatalf("runtime %+v before the exec, want go", r)
	}
	counter := -1
	for i, f := range n.files {
		if filepath.Dir(f.path) == group {
			counter = i
		}
	}
	if counter < 0 {
		t.Fatalf("no counter file in %s", group)
	}
	n.files[counter].frozen = true
	n.run(time.Second) // a report that sees the last move, then idle
	link := filepath.Join(n.root, "proc", strconv.Itoa(goPID))
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/proc/"+strconv.Itoa(sleepPID), link); err != nil {
		t.Fatal(err)
	}
	n.run(3 * time.Second)
	if r := viewOfGroup(t, n, group).Runtime; r == nil || r.Runtime != "go" {
		t.Errorf("runtime %+v while the container's usage stood still: want go, as read before (nothing read)", r)
	}
	n.files[counter].frozen = false
	n.run(time.Second)
	if v := viewOfGroup(t, n, group); v.Runtime != nil || !strings.Contains(v.RuntimeWhy, "runtime unknown") {
		t.Errorf("after the usage moved: runtime %+v, why %q; want it read again (none: the exec)", v.Runtime, v.RuntimeWhy)
	}
}

// goInFakeContainer starts a real Go process (gofmt, GOMAXPROCS=3) and a
// sleep, and a fake v2 node whose first container's group lists the Go
// process, its /proc entry linked under the fake root (the sleep's pid is
// for the tests' "exec": relinking the Go pid to another binary).
func goInFakeContainer(t *testing.T) (n *fakeNode, group string, goPID, sleepPID int) {
	t.Helper()
	goPID = startChild(t, "gofmt", "GOMAXPROCS=3")
	sleepPID = startChild(t, "sleep")
	n = newFakeNode(t, "v2-kubepods-systemd", func(root string) {
		group = firstContainerGroup(t, root)
		if err := os.WriteFile(filepath.Join(group, "cgroup.procs"), []byte(strconv.Itoa(goPID)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/proc/"+strconv.Itoa(goPID), filepath.Join(root, "proc", strconv.Itoa(goPID))); err != nil {
			t.Fatal(err)
		}
	})
	return n, group, goPID, sleepPID
}

// viewOfGroup is /advice's entry for the group at directory dir.
func viewOfGroup(t *testing.T, n *fakeNode, dir string) *View {
	t.Helper()
	for _, v := range adviceOf(t, n.a.Handler()).Containers {
		if strings.HasSuffix(dir, v.Cgroup) {
			return v
		}
	}
	t.Fatalf("/advice has no entry for %s", dir)
	return nil
}

// TestAgentRuntimeWithoutHostProc: a group with processes whose /proc the
// agent's root does not hold (the DaemonSet without runtime.hostProc) is
// advised without its runtime, with one line saying so, not that its
// processes exited; a group whose cgroup.procs lists its processes as 0
// (outside the agent's PID namespace) says that.
func TestAgentRuntimeWithoutHostProc(t *testing.T) {
	for _, c := range []struct{ procs, want string }{
		{"4242\n", "processes are not under"},
		{"0\n0\n", "outside the agent's PID namespace"},
	} {
		var group string
		n := newFakeNode(t, "v2-kubepods-systemd", func(root string) {
			group = firstContainerGroup(t, root)
			if err := os.WriteFile(filepath.Join(group, "cgroup.procs"), []byte(c.procs), 0o644); err != nil {
				t.Fatal(err)
			}
		})
		n.run(2 * time.Second)
		v := viewOfGroup(t, n, group)
		if v.Runtime != nil || !strings.Contains(v.RuntimeWhy, c.want) || !strings.Contains(v.RuntimeWhy, "runtime.hostProc=true") || strings.Contains(v.RuntimeWhy, "exited") {
			t.Errorf("cgroup.procs %q: runtime %+v, why %q: want none, saying %q and what to set", c.procs, v.Runtime, v.RuntimeWhy, c.want)
		}
	}
}

// firstContainerGroup is the first container group (cri-containerd-*) the
// walk of a fake node's cgroup tree under root meets; the test fails if
// there is none.
func firstContainerGroup(t *testing.T, root string) string {
	t.Helper()
	var group string
	filepath.WalkDir(filepath.Join(root, "sys/fs/cgroup"), func(p string, d os.DirEntry, err error) error {
		if err == nil && group == "" && d.IsDir() && strings.HasPrefix(d.Name(), "cri-containerd-") {
			group = p
		}
		return nil
	})
	if group == "" {
		t.Fatal("the fake tree has no container group")
	}
	return group
}
