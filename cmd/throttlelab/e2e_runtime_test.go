package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/testenv"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// realService is a service started in a group for a real test: killed and
// reaped on every path by t.Cleanup.
type realService struct {
	pid   int
	url   string
	ready string // its first line
}

// startIn runs argv inside g and, on cgroup v1 with cpuacct mounted apart,
// its twin there (watchtest.WithUsage: the shell moves itself in before it
// execs, so the service never runs outside them) and waits for its first line,
// which names its address. The service ends when its stdin closes or at
// the test's end.
func startIn(t *testing.T, g *cgrouptest.Group, env []string, argv ...string) realService {
	t.Helper()
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + a + "'"
	}
	join := ""
	for _, d := range watchtest.WithUsage(t, g) {
		join += "echo $$ > '" + filepath.Join(d, "cgroup.procs") + "' && "
	}
	cmd := exec.Command("sh", "-c", join+"exec "+strings.Join(q, " "))
	cmd.Env = append(os.Environ(), env...)
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
		t.Fatalf("starting %s: %v", argv[0], err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("%s said nothing: %v", argv[0], err)
	}
	go io.Copy(io.Discard, stdout)
	u := regexp.MustCompile(`http://[0-9.]+:[0-9]+`).FindString(line)
	if u == "" {
		t.Fatalf("%s: no address in its first line %q", argv[0], line)
	}
	return realService{pid: cmd.Process.Pid, url: u, ready: strings.TrimSpace(line)}
}

// loadOn drives a bounded open-loop load of 5 ms burn requests at rate
// per second on url with the project's load generator, for the test.
func loadOn(t *testing.T, bin, url, rate string) {
	t.Helper()
	cmd := exec.Command(bin, "load", "--mode", "rate", "--rate", rate, "--request", "burn", "--burn", "cpu=5ms", "--target", url,
		"--duration", "5m", "--timeout", "5s")
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
}

// adviseRuntimeReal runs advise --pid on pid, as JSON and as text, and
// returns the JSON's runtime object and the text.
func adviseRuntimeReal(t *testing.T, pid int) (map[string]any, string) {
	t.Helper()
	run := func(args ...string) string {
		r := run(t, args...)
		if r.code != 0 && r.code != 1 || r.stdout == "" {
			t.Fatalf("throttlelab %s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
		}
		return r.stdout
	}
	js := run("advise", "--pid", strconv.Itoa(pid), "--duration", "12s", "-o", "json")
	var doc struct {
		Runtime  map[string]any `json:"runtime"`
		Warnings []string       `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Runtime == nil {
		t.Fatalf("advise --pid %d: no runtime in the JSON; warnings %q", pid, doc.Warnings)
	}
	return doc.Runtime, run("advise", "--pid", strconv.Itoa(pid), "--duration", "6s")
}

// checkRuntimeReal holds what advise said of a runtime set to 8 under 300m.
func checkRuntimeReal(t *testing.T, rt map[string]any, text, kind, setting string) {
	t.Helper()
	rec, _ := rt["recommended_setting"].(string)
	n, _ := rt["parallelism_recommended"].(float64)
	if rt["runtime"] != kind || rt["setting"] != setting || rt["setting_value"] != 8.0 || rt["parallelism_now"] != 8.0 ||
		n < 1 || rec != setting+"="+strconv.Itoa(int(n)) {
		t.Errorf("runtime %v; want %s with %s=8, 8 now and a recommended value", rt, kind, setting)
	}
	if p, _ := rt["predicted"].([]any); len(p) == 0 {
		t.Errorf("runtime %v: no prediction", rt)
	}
	if !strings.Contains(text, "Runtime: "+kind) || !strings.Contains(text, setting+"=8") || !regexp.MustCompile(regexp.QuoteMeta(setting)+`=[1-7]\b`).MatchString(text) {
		t.Errorf("the text lacks the runtime's line with %s=8 and a recommended value (the JSON, a separate run, said %s):\n%s", setting, rec, text)
	}
	t.Logf("%s: %v", kind, rt)
}

// TestAdviseRuntimeReal: the project's Go server with GOMAXPROCS=8 and a
// JVM service with -XX:ActiveProcessorCount=8, each in a real group
// limited to 300m under load: advise --pid reports 8 and a recommended
// value, in the text and the JSON. Run it under the host lock:
//
//	flock /tmp/throttlelab-host.lock go test ./cmd/throttlelab -run AdviseRuntimeReal
func TestAdviseRuntimeReal(t *testing.T) {
	cgrouptest.Require(t)
	bin := binary
	t.Run("go", func(t *testing.T) {
		g := cgrouptest.LimitedGroup(t, 30000, 100000)
		s := startIn(t, g, []string{"GOMAXPROCS=8"}, bin, "serve", "--listen", "127.0.0.1:0", "--gomaxprocs", "8")
		if !strings.Contains(s.ready, "gomaxprocs=8") {
			t.Fatalf("the server says %q; want gomaxprocs=8", s.ready)
		}
		loadOn(t, bin, s.url, "40")
		rt, text := adviseRuntimeReal(t, s.pid)
		checkRuntimeReal(t, rt, text, "go", "GOMAXPROCS")
	})
	t.Run("jvm", func(t *testing.T) {
		javac, err := exec.LookPath("javac")
		if err != nil {
			testenv.Unavailable(t, "javac is not on PATH (apt-get install openjdk-17-jdk-headless): %v", err)
		}
		java, err := exec.LookPath("java")
		if err != nil {
			testenv.Unavailable(t, "java is not on PATH: %v", err)
		}
		dir := t.TempDir()
		if out, err := exec.Command(javac, "-d", dir, filepath.Join("testdata", "runtime", "Service.java")).CombinedOutput(); err != nil {
			t.Fatalf("javac: %v\n%s", err, out)
		}
		g := cgrouptest.LimitedGroup(t, 30000, 100000)
		s := startIn(t, g, nil, java, "-XX:ActiveProcessorCount=8", "-cp", dir, "Service")
		if !strings.HasSuffix(s.ready, "processors=8") {
			t.Fatalf("the service says %q; want processors=8", s.ready)
		}
		loadOn(t, bin, s.url, "40")
		rt, text := adviseRuntimeReal(t, s.pid)
		checkRuntimeReal(t, rt, text, "jvm", "-XX:ActiveProcessorCount")
	})
}
