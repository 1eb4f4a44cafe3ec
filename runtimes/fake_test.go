package runtimes

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeProc is one process of a fake /proc tree, for the runtimes that
// cannot run on this host (nginx, Envoy, gunicorn, uvicorn, .NET are not
// installed) and for the failures a live process cannot be made to show.
type fakeProc struct {
	args   []string
	env    []string
	exe    string            // the binary's path as the process sees it
	files  map[string]string // files in the process's root (configs, release)
	maps   string
	layout string // "v1", "v2"; "" means v2
	bad    string // a /proc file made unreadable (a directory in its place)
	tasks  []string
}

// fakeRoot writes procs under a new root: root/proc/PID/... with
// cmdline, environ, status (two CPUs), cgroup, exe (a link) and root (a
// link to the fake root, where files lives).
func fakeRoot(t *testing.T, procs map[int]fakeProc) string {
	t.Helper()
	root := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for pid, p := range procs {
		dir := filepath.Join(root, "proc", strconv.Itoa(pid))
		cg := "0::/kubepods/pod1/c1\n"
		if p.layout == "v1" {
			cg = "2:cpu,cpuacct:/kubepods/pod1/c1\n1:name=systemd:/x\n0::/\n"
		}
		nul := func(l []string) string {
			if len(l) == 0 {
				return ""
			}
			return strings.Join(l, "\x00") + "\x00"
		}
		write(filepath.Join(dir, "cmdline"), nul(p.args))
		write(filepath.Join(dir, "environ"), nul(p.env))
		write(filepath.Join(dir, "status"), "Name:\tx\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n")
		write(filepath.Join(dir, "cgroup"), cg)
		write(filepath.Join(dir, "maps"), p.maps)
		for i, s := range p.tasks {
			write(filepath.Join(dir, "task", strconv.Itoa(pid+i), "stat"), strconv.Itoa(pid+i)+" (x y) "+s+" 1 1 1")
		}
		if err := os.Symlink(p.exe, filepath.Join(dir, "exe")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(root, filepath.Join(dir, "root")); err != nil {
			t.Fatal(err)
		}
		for name, s := range p.files {
			write(filepath.Join(root, name), s)
		}
		if p.bad != "" {
			b := filepath.Join(dir, p.bad)
			if err := os.Remove(b); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

func TestDetectFake(t *testing.T) {
	for _, c := range []struct {
		name    string
		procs   map[int]fakeProc
		kind    Kind
		server  string
		version string
		setting Setting
		limit   float64
		procsN  int // Procs(limit, 0)
		aware   bool
		warns   int
	}{
		{
			name: "nginx master with auto and a worker",
			procs: map[int]fakeProc{
				10: {args: []string{"nginx: master process /usr/sbin/nginx -c /etc/nginx/nginx.conf"}, exe: "/usr/sbin/nginx",
					files: map[string]string{"etc/nginx/nginx.conf": "user nginx;\nworker_processes auto;\nevents {}\n"}},
				11: {args: []string{"nginx: worker process", "", ""}, exe: "/usr/sbin/nginx"},
			},
			kind: Nginx, setting: Setting{Name: "worker_processes", Set: true, Raw: "auto", From: "/etc/nginx/nginx.conf"},
			limit: 0.5, procsN: 2,
		},
		{
			name: "nginx -g overrides the file",
			procs: map[int]fakeProc{10: {args: []string{"/usr/sbin/nginx", "-g", "daemon off; worker_processes 3;"}, exe: "/usr/sbin/nginx",
				files: map[string]string{"etc/nginx/nginx.conf": "worker_processes auto;\n"}}},
			kind: Nginx, setting: Setting{Name: "worker_processes", Set: true, Value: 3, Raw: "3", From: "cmdline -g"},
			limit: 0.5, procsN: 3,
		},
		{
			name:  "nginx without its config file",
			procs: map[int]fakeProc{10: {args: []string{"nginx", "-c", "/nowhere.conf"}, exe: "/usr/sbin/nginx"}},
			kind:  Nginx, setting: Setting{Name: "worker_processes"}, limit: 1, procsN: 1, warns: 1,
		},
		{
			name:  "envoy with --concurrency",
			procs: map[int]fakeProc{7: {args: []string{"envoy", "-c", "/etc/envoy/envoy.yaml", "--concurrency", "2"}, exe: "/usr/local/bin/envoy"}},
			kind:  Envoy, setting: Setting{Name: "--concurrency", Set: true, Value: 2, Raw: "2", From: "cmdline"}, limit: 0.3, procsN: 2,
		},
		{
			name:  "envoy by default: the CPUs",
			procs: map[int]fakeProc{7: {args: []string{"envoy", "-c", "/etc/envoy/envoy.yaml"}, exe: "/usr/local/bin/envoy"}},
			kind:  Envoy, setting: Setting{Name: "--concurrency"}, limit: 0.3, procsN: 2,
		},
		{
			name: "gunicorn master and workers with -w",
			procs: map[int]fakeProc{
				20: {args: []string{"/usr/local/bin/python3.12", "/usr/local/bin/gunicorn", "app:app", "-w", "4", "-b", "0:8000"}, exe: "/usr/local/bin/python3.12", env: []string{"PYTHON_VERSION=3.12.4"}},
				21: {args: []string{"/usr/local/bin/python3.12", "/usr/local/bin/gunicorn", "app:app", "-w", "4", "-b", "0:8000"}, exe: "/usr/local/bin/python3.12", env: []string{"PYTHON_VERSION=3.12.4"}},
			},
			kind: Python, server: "gunicorn", version: "3.12.4", setting: Setting{Name: "--workers", Set: true, Value: 4, Raw: "4", From: "cmdline"}, limit: 1, procsN: 4,
		},
		{
			name:  "uvicorn with WEB_CONCURRENCY",
			procs: map[int]fakeProc{30: {args: []string{"/usr/bin/python3", "-m", "uvicorn", "main:app"}, exe: "/usr/bin/python3.11", env: []string{"WEB_CONCURRENCY=3"}}},
			kind:  Python, server: "uvicorn", version: "3.11", setting: Setting{Name: "WEB_CONCURRENCY", Set: true, Value: 3, Raw: "3", From: "environ"}, limit: 1, procsN: 3,
		},
		{
			name:  "node with UV_THREADPOOL_SIZE",
			procs: map[int]fakeProc{40: {args: []string{"node", "server.js"}, exe: "/usr/local/bin/node", env: []string{"NODE_VERSION=22.3.0", "UV_THREADPOOL_SIZE=16"}}},
			kind:  Node, version: "22.3.0", setting: Setting{Name: "UV_THREADPOOL_SIZE", Set: true, Value: 16, Raw: "16", From: "environ"}, limit: 1, procsN: 16,
		},
		{
			name: "dotnet self-contained, version from the shared runtime's path",
			procs: map[int]fakeProc{50: {args: []string{"/app/Shop"}, exe: "/app/Shop", env: []string{"DOTNET_PROCESSOR_COUNT=2"},
				maps: "7f00-7f10 r-xp 00000000 08:01 12 /usr/share/dotnet/shared/Microsoft.NETCore.App/8.0.6/libcoreclr.so\n"}},
			kind: DotNet, version: "8.0.6", setting: Setting{Name: "DOTNET_PROCESSOR_COUNT", Set: true, Value: 2, Raw: "2", From: "environ"}, limit: 4, procsN: 2, aware: true,
		},
		{
			name:  "dotnet by default reads the limit",
			procs: map[int]fakeProc{50: {args: []string{"dotnet", "Shop.dll"}, exe: "/usr/share/dotnet/dotnet", env: []string{"DOTNET_VERSION=9.0.1"}}},
			kind:  DotNet, version: "9.0.1", setting: Setting{Name: "DOTNET_PROCESSOR_COUNT"}, limit: 0.3, procsN: 1, aware: true,
		},
		{
			name: "JDK 11.0.15 on cgroup v2 does not see the limit",
			procs: map[int]fakeProc{60: {args: []string{"java", "-Xmx1g", "-jar", "app.jar", "-XX:ActiveProcessorCount=9"}, exe: "/opt/java/openjdk/bin/java",
				env:   []string{"JAVA_TOOL_OPTIONS=-XX:ParallelGCThreads=2"},
				files: map[string]string{"opt/java/openjdk/release": "IMPLEMENTOR=\"Eclipse Adoptium\"\nJAVA_VERSION=\"11.0.15\"\n"}}},
			kind: JVM, version: "11.0.15", setting: Setting{Name: "-XX:ActiveProcessorCount"}, limit: 0.3, procsN: 2,
		},
		{
			name: "JDK 8u372 on v1 with _JAVA_OPTIONS over the command line",
			procs: map[int]fakeProc{60: {args: []string{"java", "-XX:ActiveProcessorCount=4", "Main"}, exe: "/usr/lib/jvm/j8/jre/bin/java", layout: "v1",
				env:   []string{"_JAVA_OPTIONS=-XX:ActiveProcessorCount=1"},
				files: map[string]string{"usr/lib/jvm/j8/release": "JAVA_VERSION=\"1.8.0_372\"\n"}}},
			kind: JVM, version: "1.8.0_372", setting: Setting{Name: "-XX:ActiveProcessorCount", Set: true, Value: 1, Raw: "1", From: "_JAVA_OPTIONS"}, limit: 2, procsN: 1, aware: true,
		},
		{
			name: "a shell before the runtime is skipped",
			procs: map[int]fakeProc{
				1: {args: []string{"/bin/sh", "-c", "exec envoy"}, exe: "/bin/dash"},
				2: {args: []string{"envoy", "--concurrency=3"}, exe: "/usr/local/bin/envoy"},
			},
			kind: Envoy, setting: Setting{Name: "--concurrency", Set: true, Value: 3, Raw: "3", From: "cmdline"}, limit: 1, procsN: 3,
		},
		{
			name: "two runtimes in one group: the first advises, the second is named",
			procs: map[int]fakeProc{
				3: {args: []string{"node", "sidecar.js"}, exe: "/usr/bin/node"},
				4: {args: []string{"envoy", "--concurrency", "2"}, exe: "/usr/local/bin/envoy"},
			},
			kind: Node, setting: Setting{Name: "UV_THREADPOOL_SIZE"}, limit: 1, procsN: 4, warns: 1,
		},
		{
			name:  "unknown: a binary without build information",
			procs: map[int]fakeProc{70: {args: []string{"/srv/app"}, exe: "/srv/app", files: map[string]string{"srv/app": "#!/bin/sh\n"}}},
			kind:  Unknown, limit: 1, warns: 1,
		},
		{
			name:  "environ unreadable",
			procs: map[int]fakeProc{80: {args: []string{"envoy"}, exe: "/usr/local/bin/envoy", bad: "environ"}},
			kind:  Unknown, limit: 1, warns: 1,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := fakeRoot(t, c.procs)
			// A fake binary is reached through exe as the fake process sees
			// it: point exe links of files in the tree into it.
			for pid, p := range c.procs {
				if _, ok := p.files[strings.TrimPrefix(p.exe, "/")]; ok {
					link := filepath.Join(root, "proc", strconv.Itoa(pid), "exe")
					os.Remove(link)
					if err := os.Symlink(filepath.Join(root, p.exe), link); err != nil {
						t.Fatal(err)
					}
				}
			}
			var pids []int
			for pid := range c.procs {
				pids = append(pids, pid)
			}
			rt, warns := Detect(root, pids)
			if len(warns) != c.warns {
				t.Errorf("warnings %v, want %d", warns, c.warns)
			}
			for _, w := range warns {
				if w.Why == "" {
					t.Errorf("a warning without a reason: %+v", w)
				}
			}
			if rt.Kind != c.kind || rt.Server != c.server || rt.Version != c.version {
				t.Errorf("runtime %s %q %q, want %s %q %q", rt.Kind, rt.Server, rt.Version, c.kind, c.server, c.version)
			}
			if rt.Setting != c.setting {
				t.Errorf("setting %+v, want %+v", rt.Setting, c.setting)
			}
			if rt.ContainerAware != c.aware {
				t.Errorf("container aware %v (%s), want %v", rt.ContainerAware, rt.Aware, c.aware)
			}
			if len(rt.Processes) != len(c.procs) {
				t.Errorf("%d processes read, want %d", len(rt.Processes), len(c.procs))
			}
			n, rule := rt.Procs(c.limit, 0)
			if n != c.procsN {
				t.Errorf("Procs(%v) = %d (%s), want %d", c.limit, n, rule, c.procsN)
			}
		})
	}
}

func TestJVMExtraSettings(t *testing.T) {
	root := fakeRoot(t, map[int]fakeProc{5: {
		args:  []string{"java", "-XX:ConcGCThreads=1", "-cp", "-XX:ParallelGCThreads=7", "Main", "-XX:ParallelGCThreads=9"},
		exe:   "/jdk/bin/java",
		env:   []string{"JAVA_TOOL_OPTIONS=-XX:ParallelGCThreads=2", "JDK_JAVA_OPTIONS=-XX:-UseContainerSupport"},
		files: map[string]string{"jdk/release": "JAVA_VERSION=\"21.0.3\"\n"},
	}})
	p, w := Inspect(root, 5)
	if w != nil {
		t.Fatal(w)
	}
	// -cp's value and the program's arguments are not the VM's options.
	want := []Setting{
		{Name: "-XX:ParallelGCThreads", Set: true, Value: 2, Raw: "2", From: "JAVA_TOOL_OPTIONS"},
		{Name: "-XX:ConcGCThreads", Set: true, Value: 1, Raw: "1", From: "cmdline"},
	}
	if len(p.Extra) != 2 || p.Extra[0] != want[0] || p.Extra[1] != want[1] {
		t.Errorf("extra %+v, want %+v", p.Extra, want)
	}
	if p.ContainerAware || p.Aware != "-XX:-UseContainerSupport" {
		t.Errorf("aware %v (%s), want off by -XX:-UseContainerSupport", p.ContainerAware, p.Aware)
	}
	if n, _ := p.Procs(0.5, 0); n != 2 {
		t.Errorf("without container support the JVM sees the CPUs (2), got %d", n)
	}
}

func TestDetectExited(t *testing.T) {
	root := fakeRoot(t, map[int]fakeProc{})
	rt, warns := Detect(root, []int{4242})
	if rt.Kind != Unknown || len(warns) != 1 || !errors.Is(warns[0].Err, fs.ErrNotExist) || !strings.Contains(warns[0].Why, "exited") {
		t.Fatalf("got %s, %v; want unknown and one warning that the process exited", rt.Kind, warns)
	}
}

func TestRunnableThreadsFake(t *testing.T) {
	root := fakeRoot(t, map[int]fakeProc{
		100: {args: []string{"a"}, exe: "/a", tasks: []string{"R", "S", "R"}},
		200: {args: []string{"b"}, exe: "/b", tasks: []string{"D", "R"}},
	})
	n, warns := RunnableThreads(root, []int{100, 200, 300})
	if n != 3 {
		t.Errorf("runnable %d, want 3", n)
	}
	if len(warns) != 1 || warns[0].PID != 300 {
		t.Errorf("warnings %v, want one for the missing pid 300", warns)
	}
}
