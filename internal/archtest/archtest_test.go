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
		{ImportPath: Module + "/advise", Imports: m("cfs", "demand"), Deps: m("demand", "cfs", "record", "units")},
		{ImportPath: Module + "/demand", Imports: m("advise", "record"), Deps: m("advise", "record")},
		{ImportPath: Module + "/agent", Imports: m("advise", "report/x"), Deps: m("advise", "report/x")},
		{ImportPath: Module + "/record", Imports: m("stats"), Deps: m("stats")},
		{ImportPath: Module + "/cgroup", Imports: m("units"), Deps: m("units")},
	}
	got := strings.Join(Check(bad, Rules), "\n")
	for _, want := range []string{
		"cfs depends on cgroup",
		"stats depends on record",
		"advise depends on record",
		"agent depends on report/x",
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
		{ImportPath: Module + "/agent", Imports: m("advise"), Deps: m("advise", "cfs", "units")},
	}
	if lines := Check(good, Rules); len(lines) > 0 {
		t.Errorf("Check refused a graph that keeps the rules: %q", lines)
	}
}
