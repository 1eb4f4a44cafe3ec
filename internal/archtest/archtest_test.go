package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

// goBin is the go command on PATH (go test runs with it there).
func goBin(t *testing.T) string {
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH to list the packages with: %v", err)
	}
	return p
}

// TestImportGraph checks the module's real import graph against Rules.
func TestImportGraph(t *testing.T) {
	pkgs, err := List(goBin(t), ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: the module is not where the test looked", len(pkgs))
	}
	for _, line := range Check(pkgs, Rules) {
		t.Error(line)
	}
	for _, line := range Upward(pkgs, Floors) {
		t.Error(line)
	}
}

// TestUpwardSeesViolations: an import from a higher floor, and a package on
// no floor, are refused; a subpackage placed apart from its parent is
// judged on its own floor.
func TestUpwardSeesViolations(t *testing.T) {
	floors := []Floor{{"ground", []string{"units"}}, {"model", []string{"advise", "k8s/manifest"}}, {"callers", []string{"report", "k8s"}}}
	pkgs := []Package{
		{ImportPath: Module + "/units", Imports: []string{"fmt"}},
		{ImportPath: Module + "/advise", Imports: []string{Module + "/units", Module + "/report"}},
		{ImportPath: Module + "/report", Imports: []string{Module + "/advise", Module + "/k8s/manifest"}},
		{ImportPath: Module + "/k8s/manifest", Imports: []string{Module + "/k8s"}},
		{ImportPath: Module + "/k8s/x", Imports: []string{Module + "/k8s/manifest"}},
		{ImportPath: Module + "/newpkg"},
	}
	got := strings.Join(Upward(pkgs, floors), "\n")
	for _, want := range []string{
		"advise (model) imports report (callers): an import upwards",
		"k8s/manifest (model) imports k8s (callers): an import upwards",
		"newpkg: on no floor",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Upward did not say %q; it said:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n") + 1; n != 3 {
		t.Errorf("Upward said %d things, want the 3 above:\n%s", n, got)
	}
}

// TestCheckSeesViolations feeds Check a graph that breaks every rule, and
// one that keeps them.
func TestCheckSeesViolations(t *testing.T) {
	std := map[string]bool{"fmt": true, "math": true, "time": true}
	m := func(s ...string) []string {
		for i := range s {
			if !std[s[i]] {
				s[i] = Module + "/" + s[i]
			}
		}
		return s
	}
	bad := []Package{
		{ImportPath: Module + "/units"},
		{ImportPath: Module + "/cfs", Imports: m("units", "cgroup"), Deps: m("cgroup", "units")},
		{ImportPath: Module + "/stats", Imports: m("record"), Deps: m("record")},
		{ImportPath: Module + "/advise", Imports: m("cfs", "demand", "cgroup"), Deps: m("demand", "cfs", "record", "units", "cgroup")},
		{ImportPath: Module + "/demand", Imports: m("advise", "record", "top"), Deps: m("advise", "record", "top")},
		{ImportPath: Module + "/agent", Imports: m("advise", "report/x", "top"), Deps: m("advise", "report/x", "top")},
		{ImportPath: Module + "/fleet", Imports: m("agent"), Deps: m("agent", "top")},
		{ImportPath: Module + "/report", Imports: m("presets"), Deps: m("presets")},
		{ImportPath: Module + "/record", Imports: m("stats"), Deps: m("stats")},
		{ImportPath: Module + "/cgroup", Imports: m("units"), Deps: m("units")},
	}
	got := strings.Join(Check(bad, Rules), "\n")
	for _, want := range []string{
		"cfs depends on cgroup",
		"stats depends on record",
		"advise depends on record",
		"agent depends on report/x",
		"advise depends on cgroup",
		"agent depends on top",
		"demand depends on top",
		"fleet depends on top",
		"report imports presets",
		"import cycle: advise -> demand -> advise",
		"import cycle: record -> stats -> record",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Check did not say %q; it said:\n%s", want, got)
		}
	}
	if strings.Contains(got, "cfs depends on units") {
		t.Errorf("Check refused units under cfs:\n%s", got)
	}
	good := []Package{
		{ImportPath: Module + "/units", Imports: m("fmt")},
		{ImportPath: Module + "/cfs", Imports: m("units", "time"), Deps: m("time", "units")},
		{ImportPath: Module + "/stats", Imports: m("math"), Deps: m("math")},
		{ImportPath: Module + "/advise", Imports: m("cfs"), Deps: m("cfs", "units")},
		{ImportPath: Module + "/agent", Imports: m("advise", "watch"), Deps: m("advise", "watch", "cgroup", "cfs", "units")},
		{ImportPath: Module + "/demand", Imports: m("watch"), Deps: m("watch", "cgroup", "cfs", "units")},
		{ImportPath: Module + "/fleet", Imports: m("agent"), Deps: m("agent", "watch", "cgroup", "cfs", "units")},
		{ImportPath: Module + "/report", Imports: m("advise"), Deps: m("advise", "cfs", "units")},
	}
	if lines := Check(good, Rules); len(lines) > 0 {
		t.Errorf("Check refused a graph that keeps the rules: %q", lines)
	}
}
