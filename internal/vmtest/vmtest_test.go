package vmtest

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readNewc parses a newc cpio archive into name -> (mode, data).
func readNewc(t *testing.T, b []byte) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	for len(b) > 0 {
		if len(b) < 110 || string(b[:6]) != "070701" {
			t.Fatalf("bad header at %q", b[:min(len(b), 16)])
		}
		field := func(i int) uint32 {
			v, err := strconv.ParseUint(string(b[6+8*i:14+8*i]), 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			return uint32(v)
		}
		mode, size, namesize, major, minor := field(1), int(field(6)), int(field(11)), field(9), field(10)
		name := string(b[110 : 110+namesize-1])
		off := (110 + namesize + 3) &^ 3
		data := b[off : off+size]
		b = b[(off+size+3)&^3:]
		if name == "TRAILER!!!" {
			break
		}
		out[name] = entry{mode: mode, data: data, rdevMajor: major, rdevMinor: minor}
	}
	return out
}

func TestArchiveRoundTrip(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "tool")
	if err := os.WriteFile(host, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var a Archive
	if err := a.HostFile("bin/tool", host); err != nil {
		t.Fatal(err)
	}
	a.File("init", []byte("abc"), 0o755)
	a.Symlink("bin/sh", "busybox")
	a.CharDev("dev/console", 5, 1)
	var buf bytes.Buffer
	if _, err := a.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	z, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	got := readNewc(t, raw)
	for name, want := range map[string]entry{
		"bin":         {mode: modeDir | 0o755},
		"bin/tool":    {mode: modeFile | 0o755, data: []byte("#!/bin/sh\necho hi\n")},
		"init":        {mode: modeFile | 0o755, data: []byte("abc")},
		"bin/sh":      {mode: modeLink | 0o777, data: []byte("busybox")},
		"dev":         {mode: modeDir | 0o755},
		"dev/console": {mode: modeChar | 0o600, rdevMajor: 5, rdevMinor: 1},
	} {
		e, ok := got[name]
		if !ok || e.mode != want.mode || string(e.data) != string(want.data) || e.rdevMajor != want.rdevMajor || e.rdevMinor != want.rdevMinor {
			t.Errorf("%s: got %+v (present %v), want %+v", name, e, ok, want)
		}
	}
	if len(got) != 6 {
		t.Errorf("%d entries, want 6: %v", len(got), got)
	}
}

func TestInitScript(t *testing.T) {
	s, err := InitScript(Layouts, []Suite{{Pkg: "cmd/throttlelab", Run: "^TestA$|it's", Timeout: time.Minute, Env: []string{"K=v"}, Binary: true}}, "/work/x")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"v2)\nmount -t cgroup2 cgroup2 /sys/fs/cgroup\n;;",
		"hybrid)\n", "v1-joined)\n", "ln -s cpu,cpuacct /sys/fs/cgroup/cpu",
		"export THROTTLELAB_VM=\"$(uname -r)/$layout\"",
		"cd '/work/x/cmd/throttlelab' && echo \"@@vmtest begin cmd/throttlelab\"",
		"K=v THROTTLELAB_BINARY=/bin/throttlelab /tests/throttlelab.test -test.v -test.count=1 -test.timeout=1m0s -test.run '^TestA$|it'\\''s' 2>&1",
		"echo \"@@vmtest end cmd/throttlelab rc=$?\"", "poweroff -f",
		"if grep -qw vmtest.probe=1 /proc/cmdline; then echo \"@@vmtest probe ok\"; poweroff -f; fi",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("init script lacks %q:\n%s", want, s)
		}
	}
	if _, err := InitScript(Layouts, []Suite{{Pkg: "x", Env: []string{"K=$(reboot)"}}}, "/w"); err == nil {
		t.Error("an env value with shell syntax was accepted")
	}
	if _, err := InitScript(Layouts, nil, "/w x"); err == nil {
		t.Error("a source directory with a space was accepted")
	}
}

// TestWithEnv: -env reaches every test binary of the guest's script, after
// the suite's own knobs, and the suites it was given keep theirs.
func TestWithEnv(t *testing.T) {
	ss := []Suite{{Pkg: "demand", Run: "^TestX$", Timeout: time.Minute, Env: []string{"A=1"}}, {Pkg: "top", Run: "Real", Timeout: time.Minute}}
	got := WithEnv(ss, []string{"THROTTLELAB_SLICE_KERNEL=1"})
	if len(ss[0].Env) != 1 || len(ss[1].Env) != 0 {
		t.Errorf("the suites given changed: %v, %v", ss[0].Env, ss[1].Env)
	}
	s, err := InitScript(Layouts, got, "/w")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"A=1 THROTTLELAB_SLICE_KERNEL=1 /tests/demand.test", "THROTTLELAB_SLICE_KERNEL=1 /tests/top.test"} {
		if !strings.Contains(s, want) {
			t.Errorf("init script lacks %q:\n%s", want, s)
		}
	}
	if WithEnv(ss, nil)[0].Env[0] != "A=1" {
		t.Error("WithEnv without env changed a suite")
	}
}

func TestConsoleParser(t *testing.T) {
	now := time.Unix(0, 0)
	p := newConsoleParser(Kernels[0], V2)
	p.now = func() time.Time { now = now.Add(time.Second); return now }
	for _, l := range []string{
		"[    1.0] boot noise",
		"@@vmtest start 6.1.0-50-cloud-amd64 v2 nproc=2",
		"@@vmtest begin cgroup",
		"=== RUN   TestA", "--- PASS: TestA (0.1s)", "--- SKIP: TestB (0.0s)", "    --- FAIL: TestC/sub (0.0s)", "PASS",
		"@@vmtest end cgroup rc=0",
		"@@vmtest begin top",
		"--- FAIL: TestD (0.2s)", "FAIL",
		"@@vmtest end top rc=1",
		"@@vmtest begin agent",
	} {
		p.line(l)
	}
	c := p.cell()
	if c.Release != "6.1.0-50-cloud-amd64" || len(c.Suites) != 3 || p.done {
		t.Fatalf("cell %+v done %v", c, p.done)
	}
	cg, top, ag := c.Suites[0], c.Suites[1], c.Suites[2]
	if !cg.Passed || cg.Pass != 1 || cg.Skip != 1 || cg.Fail != 0 || cg.Took != time.Second {
		t.Errorf("cgroup: %+v", cg)
	}
	if top.Passed || top.Fail != 1 || len(top.Output) != 2 {
		t.Errorf("top: %+v", top)
	}
	if ag.Passed || !ag.Ran {
		t.Errorf("agent, cut off: %+v", ag)
	}
	if c.Passed() {
		t.Error("a cell with a failing package passed")
	}
	p.line("@@vmtest end agent rc=0")
	p.line("@@vmtest done")
	if !p.done {
		t.Error("done not seen")
	}
	if ag := p.cell().Suites[2]; ag.Passed {
		t.Errorf("agent ran no test and exited 0: a suite whose pattern matches nothing passed: %+v", ag)
	}
	var b strings.Builder
	c = p.cell()
	c.Accel = "tcg"
	if err := WriteTable(&b, []Cell{c}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "6.1.0-50-cloud-amd64  v2      tcg    top      FAIL    0     0     1     1 s") {
		t.Errorf("table:\n%s", b.String())
	}
}

func TestAvailableRefusesDynamicBusybox(t *testing.T) {
	// The test binary itself: static or not, it says which.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := isDynamicELF(self)
	if err != nil {
		t.Fatal(err)
	}
	why := Available(self)
	if dyn && !strings.Contains(why, "not statically linked") && !strings.Contains(why, QEMU) {
		t.Errorf("a dynamic binary as busybox: %q", why)
	}
	if why := Available(filepath.Join(t.TempDir(), "none")); why == "" {
		t.Error("a missing busybox was accepted")
	}
}

func TestFinders(t *testing.T) {
	if _, err := FindKernel(Kernels, "5.10"); err == nil || !strings.Contains(err.Error(), "6.1, 6.12") {
		t.Errorf("unknown kernel: %v", err)
	}
	if l, err := FindLayout(Layouts, "hybrid"); err != nil || l.Name != "hybrid" {
		t.Errorf("hybrid: %v %v", l, err)
	}
	if s, err := FindSuites(Suites, []string{"./watch", "cmd/throttlelab/"}); err != nil || len(s) != 2 {
		t.Errorf("suites: %v %v", s, err)
	}
	if _, err := FindSuites(Suites, []string{"sim"}); err == nil {
		t.Error("sim accepted as a VM suite")
	}
}

// TestNeverBegan: a package whose binary never began in the guest (its
// directory hidden, say) is named, so that its cell fails instead of passing
// with no row.
func TestNeverBegan(t *testing.T) {
	suites := []Suite{{Pkg: "cgroup"}, {Pkg: "top"}, {Pkg: "cmd/throttlelab"}}
	got := neverBegan(suites, []SuiteResult{{Pkg: "top"}})
	if want := []string{"cgroup", "cmd/throttlelab"}; !slices.Equal(got, want) {
		t.Errorf("neverBegan = %q, want %q", got, want)
	}
	if got := neverBegan(suites, []SuiteResult{{Pkg: "cgroup"}, {Pkg: "top"}, {Pkg: "cmd/throttlelab"}}); len(got) != 0 {
		t.Errorf("every package began, neverBegan = %q", got)
	}
}

// TestSuitesMatchTests: every suite's pattern matches a test of its package
// (read from its _test.go files), so a test moved to another package cannot
// leave a suite that runs nothing in every cell.
func TestSuitesMatchTests(t *testing.T) {
	testFunc := regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	for _, s := range Suites {
		files, err := filepath.Glob(filepath.Join("..", "..", s.Pkg, "*_test.go"))
		if err != nil || len(files) == 0 {
			t.Errorf("suite %s: no test files (%v)", s.Pkg, err)
			continue
		}
		run := regexp.MustCompile(s.Run)
		var matched []string
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range testFunc.FindAllSubmatch(b, -1) {
				if run.Match(m[1]) {
					matched = append(matched, string(m[1]))
				}
			}
		}
		if len(matched) == 0 {
			t.Errorf("suite %s: its pattern %q matches no test of the package", s.Pkg, s.Run)
		}
	}
}
