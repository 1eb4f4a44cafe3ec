package runtimes

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/testenv"
)

// child is a real process started by a test; it waits on its stdin and is
// killed and reaped on every path by t.Cleanup.
type child struct {
	pid   int
	ready string // its first line on stdout
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// stop closes the child's stdin (its signal to exit) and reaps it.
func (c child) stop() error {
	c.stdin.Close()
	return c.cmd.Wait()
}

// start runs cmd and waits for its first line on stdout (the readiness
// signal); the line is what the child says about itself.
func start(t testing.TB, cmd *exec.Cmd) child { t.Helper(); return startSaying(t, cmd, "") }

// startSaying is start for a child that speaks only when spoken to: it
// writes say to the child's stdin before waiting for its first line.
func startSaying(t testing.TB, cmd *exec.Cmd, say string) child {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	if say != "" {
		if _, err := io.WriteString(stdin, say); err != nil {
			t.Fatalf("writing to %s: %v", cmd.Path, err)
		}
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("%s said nothing: %v", cmd.Path, err)
	}
	go io.Copy(io.Discard, stdout)
	return child{pid: cmd.Process.Pid, ready: strings.TrimSpace(line), cmd: cmd, stdin: stdin}
}

// goChild builds a tiny Go program that prints its runtime version and
// GOMAXPROCS, then waits on stdin. goLine is its go.mod's go line ("1.24");
// "" takes the toolchain's own.
func goChild(t testing.TB, goLine string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.Unavailable(t, "go is not on PATH: %v", err)
	}
	dir := t.TempDir()
	src := `package main

import (
	"fmt"
	"os"
	"runtime"
)

func main() {
	fmt.Println(runtime.Version(), runtime.GOMAXPROCS(0))
	os.Stdin.Read(make([]byte, 1))
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if goLine == "" {
		out, err := exec.Command(goBin, "env", "GOVERSION").Output()
		if err != nil {
			t.Fatalf("go env GOVERSION: %v", err)
		}
		v := strings.TrimPrefix(strings.TrimSpace(string(out)), "go")
		goLine = strings.Join(strings.SplitN(v, ".", 3)[:2], ".")
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module child\n\ngo "+goLine+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "child")
	build := exec.Command(goBin, "build", "-o", bin, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// leafLimit is the CPU limit of the process's own cgroup (quota/period;
// 0 when none), the one Go and the JVM read.
func leafLimit(t *testing.T, pid int) float64 {
	t.Helper()
	l, err := cgroup.ReadProcessLimits("/", strconv.Itoa(pid))
	if err != nil {
		t.Fatalf("reading the child's cgroup limit: %v", err)
	}
	if l.QuotaUsec <= 0 || l.PeriodUsec == 0 {
		return 0
	}
	return float64(l.QuotaUsec) / float64(l.PeriodUsec)
}

func TestDetectGoChild(t *testing.T) {
	bin := goChild(t, "")
	set := exec.Command(bin)
	set.Env = append(os.Environ(), "GOMAXPROCS=8")
	c := start(t, set)
	version, procs, _ := strings.Cut(c.ready, " ")

	rt, warns := Detect("/", []int{c.pid})
	if len(warns) != 0 {
		t.Fatalf("warnings: %v", warns)
	}
	want := Setting{Name: "GOMAXPROCS", Set: true, Value: 8, Raw: "8", From: "environ"}
	if rt.Kind != Go || rt.Version != version || rt.Setting != want {
		t.Fatalf("got %s %s %+v; want go %s %+v", rt.Kind, rt.Version, rt.Setting, version, want)
	}
	if n, _ := rt.Procs(0.3, 0); strconv.Itoa(n) != procs {
		t.Errorf("Procs = %d, the child runs with GOMAXPROCS %s", n, procs)
	}

	// Unset, the prediction from the rule is what the child chose.
	unset := exec.Command(bin)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOMAXPROCS=") {
			unset.Env = append(unset.Env, kv)
		}
	}
	d := start(t, unset)
	_, procs, _ = strings.Cut(d.ready, " ")
	p, w := Inspect("/", d.pid)
	if w != nil {
		t.Fatal(w)
	}
	if p.Setting.Set || !p.ContainerAware {
		t.Errorf("unset GOMAXPROCS on %s: set %v, container aware %v (%s)", p.Version, p.Setting.Set, p.ContainerAware, p.Aware)
	}
	if n, rule := p.Procs(leafLimit(t, d.pid), 0); strconv.Itoa(n) != procs {
		t.Errorf("predicted %d (%s), the child chose %s", n, rule, procs)
	}

	// Built by the same toolchain with an older go line, the program keeps
	// the old default (DefaultGODEBUG carries containermaxprocs=0).
	old := goChild(t, "1.24")
	o := exec.Command(old)
	o.Env = unset.Env
	e := start(t, o)
	_, procs, _ = strings.Cut(e.ready, " ")
	p, w = Inspect("/", e.pid)
	if w != nil {
		t.Fatal(w)
	}
	if p.ContainerAware || !strings.Contains(p.Aware, "containermaxprocs=0") {
		t.Errorf("go 1.24 line: container aware %v (%s), want off by containermaxprocs=0", p.ContainerAware, p.Aware)
	}
	if n, rule := p.Procs(leafLimit(t, e.pid), 0); strconv.Itoa(n) != procs {
		t.Errorf("go 1.24 line: predicted %d (%s), the child chose %s", n, rule, procs)
	}
}

func TestDetectJVM(t *testing.T) {
	javac, err := exec.LookPath("javac")
	if err != nil {
		testenv.Unavailable(t, "javac is not on PATH (apt-get install openjdk-17-jdk-headless): %v", err)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		testenv.Unavailable(t, "java is not on PATH: %v", err)
	}
	dir := t.TempDir()
	src := `public class Wait {
	public static void main(String[] a) throws Exception {
		System.out.println(Runtime.getRuntime().availableProcessors() + " " + System.getProperty("java.version"));
		System.in.read();
	}
}
`
	if err := os.WriteFile(filepath.Join(dir, "Wait.java"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(javac, "-d", dir, filepath.Join(dir, "Wait.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	c := start(t, exec.Command(java, "-XX:ActiveProcessorCount=8", "-Xshare:auto", "-cp", dir, "Wait", "-XX:ActiveProcessorCount=3"))
	procs, version, _ := strings.Cut(c.ready, " ")
	rt, warns := Detect("/", []int{c.pid})
	if len(warns) != 0 {
		t.Fatalf("warnings: %v", warns)
	}
	want := Setting{Name: "-XX:ActiveProcessorCount", Set: true, Value: 8, Raw: "8", From: "cmdline"}
	if rt.Kind != JVM || rt.Version != version || rt.Setting != want {
		t.Fatalf("got %s %s %+v; want jvm %s %+v", rt.Kind, rt.Version, rt.Setting, version, want)
	}
	if n, _ := rt.Procs(0.3, 0); strconv.Itoa(n) != procs {
		t.Errorf("Procs = %d, the JVM sees %s processors", n, procs)
	}

	// Unset: the rule's prediction is what the JVM counts.
	d := start(t, exec.Command(java, "-cp", dir, "Wait"))
	procs, _, _ = strings.Cut(d.ready, " ")
	p, w := Inspect("/", d.pid)
	if w != nil {
		t.Fatal(w)
	}
	if n, rule := p.Procs(leafLimit(t, d.pid), 0); strconv.Itoa(n) != procs {
		t.Errorf("predicted %d (%s), the JVM counts %s", n, rule, procs)
	}
}

func TestDetectNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Unavailable(t, "node is not on PATH: %v", err)
	}
	cmd := exec.Command(node, "-e", `console.log(process.env.UV_THREADPOOL_SIZE); process.stdin.resume()`)
	cmd.Env = append(os.Environ(), "UV_THREADPOOL_SIZE=8")
	c := start(t, cmd)
	rt, warns := Detect("/", []int{c.pid})
	if len(warns) != 0 {
		t.Fatalf("warnings: %v", warns)
	}
	if rt.Kind != Node || !rt.Setting.Set || strconv.Itoa(rt.Setting.Value) != c.ready {
		t.Fatalf("got %s %+v; node says UV_THREADPOOL_SIZE=%s", rt.Kind, rt.Setting, c.ready)
	}
}

func TestDetectRealUnknownAndExited(t *testing.T) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		testenv.Unavailable(t, "cat is not on PATH: %v", err)
	}
	// cat echoing a line back is its readiness: it has exec'd and reads.
	c := startSaying(t, exec.Command(cat), "ready\n")
	rt, warns := Detect("/", []int{c.pid})
	if rt.Kind != Unknown || len(warns) != 1 || !strings.Contains(warns[0].Why, "no Go build information") {
		t.Fatalf("cat: got %s, %v; want unknown with one warning naming the missing build information", rt.Kind, warns)
	}

	// Exited and reaped: its /proc directory is gone.
	if err := c.stop(); err != nil {
		t.Fatal(err)
	}
	rt, warns = Detect("/", []int{c.pid})
	if rt.Kind != Unknown || len(warns) != 1 || !errors.Is(warns[0].Err, fs.ErrNotExist) {
		t.Fatalf("exited: got %s, %v; want unknown with one warning that it exited", rt.Kind, warns)
	}
}

func TestRunnableThreadsSelf(t *testing.T) {
	// The reading thread is running while it reads its own stat.
	n, warns := RunnableThreads("/", []int{os.Getpid()})
	if n < 1 || len(warns) != 0 {
		t.Fatalf("RunnableThreads(self) = %d, %v; want at least the reader", n, warns)
	}
}

// BenchmarkDetect is the cost of reading a Go process's runtime once,
// against one pread-sized read of its stat (what a 10 ms sample costs per
// file): the ratio says how many samples one Detect is worth.
func BenchmarkDetect(b *testing.B) {
	bin := goChild(b, "")
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=8")
	c := start(b, cmd)
	pids := []int{c.pid}
	stat := filepath.Join("/proc", strconv.Itoa(c.pid), "stat")
	const refReads = 1000
	t0 := time.Now()
	for range refReads {
		if _, err := os.ReadFile(stat); err != nil {
			b.Fatal(err)
		}
	}
	ref := time.Since(t0) / refReads
	b.ResetTimer()
	for b.Loop() {
		if rt, w := Detect("/", pids); rt.Kind != Go || len(w) != 0 {
			b.Fatalf("%s %v", rt.Kind, w)
		}
	}
	b.StopTimer()
	per := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(per)/float64(ref), "stat-reads/op")
}
