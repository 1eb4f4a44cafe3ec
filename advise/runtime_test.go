package advise_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/demand"
	"github.com/throttlelab/throttlelab/runtimes"
	"github.com/throttlelab/throttlelab/schemas"
	"github.com/throttlelab/throttlelab/schemas/schematest"
)

// fakeProc is one process of a fake /proc tree.
type fakeProc struct {
	args, env []string
	exe       string            // the binary's path, as the process's exe link
	files     map[string]string // files under the root (a JDK's release)
	bad       string            // a /proc file made unreadable (a directory in its place)
}

// fakeProcRoot writes procs under a new root: root/proc/PID with cmdline,
// environ, status (two CPUs), cgroup (v2), exe and root links, and one
// runnable and one sleeping thread.
func fakeProcRoot(t *testing.T, procs map[int]fakeProc) string {
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
	nul := func(l []string) string {
		if len(l) == 0 {
			return ""
		}
		return strings.Join(l, "\x00") + "\x00"
	}
	for pid, p := range procs {
		dir := filepath.Join(root, "proc", strconv.Itoa(pid))
		write(filepath.Join(dir, "cmdline"), nul(p.args))
		write(filepath.Join(dir, "environ"), nul(p.env))
		write(filepath.Join(dir, "status"), "Name:\tx\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n")
		write(filepath.Join(dir, "cgroup"), "0::/svc\n")
		write(filepath.Join(dir, "task", strconv.Itoa(pid), "stat"), strconv.Itoa(pid)+" (x) R 1 1 1")
		write(filepath.Join(dir, "task", strconv.Itoa(pid+1), "stat"), strconv.Itoa(pid+1)+" (x) S 1 1 1")
		for name, s := range p.files {
			write(filepath.Join(root, name), s)
		}
		if err := os.Symlink(p.exe, filepath.Join(dir, "exe")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(root, filepath.Join(dir, "root")); err != nil {
			t.Fatal(err)
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

// fixtureDemand is the e2e fixture's 12 s of samples.
func fixtureDemand(t *testing.T) *advise.Demand {
	t.Helper()
	fh, err := os.Open("../cmd/throttlelab/testdata/advise-usage.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	d, err := demand.ReadCSV(fh)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// runtimeAdvice is the fixture's advice (sampled under 300m) with the
// runtime read from root's pids added, its brief and its JSON.
func runtimeAdvice(t *testing.T, root string, pids []int) (*advise.Advice, string, []byte) {
	t.Helper()
	d := fixtureDemand(t)
	a, err := advise.Advise(d, advise.Request{GridSize: 6}, advise.Sampled{Source: "fixture", LimitMilli: 300})
	if err != nil {
		t.Fatal(err)
	}
	facts, warning := runtimes.ForAdvice(root, pids)
	if err := advise.AddRuntime(a, d, facts, warning, advise.Options{}); err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := advise.WriteBrief(&text, a, "(more: --details)"); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(text.String(), "\n"); n > advise.BriefLines {
		t.Errorf("the brief has %d lines, more than %d:\n%s", n, advise.BriefLines, text.String())
	}
	b, err := json.Marshal(schemas.Doc(schemas.KindAdvice, a))
	if err != nil {
		t.Fatal(err)
	}
	schematest.Check(t, "advice with a runtime", b)
	return a, text.String(), b
}

// TestAdviseRuntimeFake: a Go binary with GOMAXPROCS=8 and a JVM with
// -XX:ActiveProcessorCount=8 in a fake /proc are advised with their
// setting found (8), the value to set spelled as each takes it, in the
// text's one line and the JSON's runtime object.
func TestAdviseRuntimeFake(t *testing.T) {
	self, err := os.Executable() // a Go binary, with build information
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, kind, setting, set string
		proc                     fakeProc
	}{
		{name: "go", kind: "go", setting: "GOMAXPROCS", set: "GOMAXPROCS=1",
			proc: fakeProc{args: []string{"/srv/server"}, env: []string{"GOMAXPROCS=8"}, exe: self}},
		{name: "jvm", kind: "jvm", setting: "-XX:ActiveProcessorCount", set: "-XX:ActiveProcessorCount=1",
			proc: fakeProc{args: []string{"/usr/lib/jvm/java-17/bin/java", "-XX:ActiveProcessorCount=8", "-cp", "/app", "Main"}, exe: "/usr/lib/jvm/java-17/bin/java",
				files: map[string]string{"usr/lib/jvm/java-17/release": "JAVA_VERSION=\"17.0.15\"\n"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := fakeProcRoot(t, map[int]fakeProc{100: c.proc})
			a, text, js := runtimeAdvice(t, root, []int{100})
			ra := a.Runtime
			if ra == nil {
				t.Fatalf("no runtime; warnings %v", a.Warnings)
			}
			if ra.Runtime != c.kind || ra.Setting != c.setting || !ra.Set || ra.Value != 8 || ra.Now != 8 || ra.AtRecommended != 8 {
				t.Errorf("runtime %+v; want %s with %s=8 set, 8 now and under the recommended limit", *ra, c.kind, c.setting)
			}
			if ra.RunnableThreads != 1 || ra.CPUs != 2 {
				t.Errorf("runnable %d on %d CPUs, want 1 on 2", ra.RunnableThreads, ra.CPUs)
			}
			rec := a.Recommendation.LimitMilli
			want := min(2, max(advise.MinParallelism(c.kind), int((rec+999)/1000))) // Go and a JVM: at least 2 (one thread queues; a JVM's serial ergonomics at 1)
			if ra.Recommended != want || ra.RecommendedSetting != strings.Replace(c.set, "=1", "="+strconv.Itoa(want), 1) {
				t.Errorf("recommended %d (%q) under %dm, want %d", ra.Recommended, ra.RecommendedSetting, rec, want)
			}
			// 8 threads run on the 2 CPUs: the replay's bound is 2.
			if len(ra.Predicted) == 0 || ra.Predicted[0].Parallelism != 8 || ra.Predicted[0].Cores != 2 {
				t.Errorf("predicted %+v; want the runtime's own 8 first, bound to 2 cores", ra.Predicted)
			}
			if want == 1 && (len(ra.Predicted) != 2 || ra.Predicted[1].Cores != 1) {
				t.Errorf("predicted %+v; want the recommended 1 replayed on 1 core", ra.Predicted)
			}
			line := ""
			for _, l := range strings.Split(text, "\n") {
				if strings.HasPrefix(l, "Runtime: ") {
					line = l
				}
			}
			if !strings.Contains(line, c.setting+"=8") || !strings.Contains(line, ra.RecommendedSetting) || strings.Count(text, "Runtime: ") != 1 {
				t.Errorf("want one line naming %s=8 and %s:\n%s", c.setting, ra.RecommendedSetting, text)
			}
			for _, k := range []string{`"runtime":{`, `"setting_value":8`, `"recommended_setting":"` + ra.RecommendedSetting + `"`, `"parallelism_now":8`} {
				if !bytes.Contains(js, []byte(k)) {
					t.Errorf("JSON lacks %s", k)
				}
			}
		})
	}
}

// TestAdviseRuntimeBad: a process that exits while read, /proc
// unreadable, a binary without build information, an empty group: the
// group is advised without its runtime, with one warning naming why.
func TestAdviseRuntimeBad(t *testing.T) {
	notGo := filepath.Join(t.TempDir(), "server")
	if err := os.WriteFile(notGo, []byte("#!/bin/sh\nexec sleep 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		procs map[int]fakeProc
		pids  []int
		why   string
	}{
		{"exited", map[int]fakeProc{}, []int{4242}, "pid 4242 exited while read"},
		{"proc unreadable", map[int]fakeProc{7: {args: []string{"/srv/server"}, exe: self, bad: "environ"}}, []int{7}, "/proc unreadable"},
		{"no build information", map[int]fakeProc{7: {args: []string{"/srv/server"}, exe: notGo}}, []int{7}, "no Go build information"},
		{"empty group", map[int]fakeProc{}, nil, "no process"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, text, js := runtimeAdvice(t, fakeProcRoot(t, c.procs), c.pids)
			if a.Runtime != nil || bytes.Contains(js, []byte(`"runtime":{`)) {
				t.Errorf("a runtime was advised: %+v", *a.Runtime)
			}
			var mine []string
			for _, w := range a.Warnings {
				if strings.Contains(w, "runtime") {
					mine = append(mine, w)
				}
			}
			if len(mine) != 1 || !strings.Contains(mine[0], c.why) {
				t.Errorf("runtime warnings %q; want one naming %q", mine, c.why)
			}
			if !strings.Contains(text, "warning: "+mine[0][:20]) || !strings.HasPrefix(text, "Set the CPU limit") && !strings.HasPrefix(text, "No limit") {
				t.Errorf("the brief lacks the answer or the warning:\n%s", text)
			}
		})
	}
}

// TestRuntimeSchemaRefuses: the runtime object's schema can fail: the
// real advice's runtime with its kind dropped, unknown (never guessed), a
// count as a string or an unknown field is refused.
func TestRuntimeSchemaRefuses(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := fakeProcRoot(t, map[int]fakeProc{100: {args: []string{"/srv/server"}, env: []string{"GOMAXPROCS=8"}, exe: self}})
	_, _, js := runtimeAdvice(t, root, []int{100})
	for name, c := range map[string][2]string{
		"no runtime named": {`"runtime":"go",`, ``},
		"unknown guessed":  {`"runtime":"go"`, `"runtime":"unknown"`},
		"count as string":  {`"setting_value":8`, `"setting_value":"8"`},
		"unknown field":    {`"setting_value":8`, `"setting_value":8,"gomaxprocs":8`},
		"bound not a side": {`"setting_value":8`, `"setting_value":8,"added_delay_bound":"exact"`},
	} {
		if !bytes.Contains(js, []byte(c[0])) {
			t.Fatalf("%s: the advice lacks %s", name, c[0])
		}
		if err := schematest.Validate(bytes.Replace(js, []byte(c[0]), []byte(c[1]), 1)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := schematest.Validate(bytes.Replace(js, []byte(`"setting_value":8`), []byte(`"setting_value":8,"added_delay_bound":"upper"`), 1)); err != nil {
		t.Errorf("an upper bound refused: %v", err)
	}
}
