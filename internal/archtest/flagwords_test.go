package archtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoFlagsOutsideCLI: no string outside the CLI names a flag, so a
// flag is renamed in internal/cli alone (issue 36, item 4).
func TestNoFlagsOutsideCLI(t *testing.T) {
	found, err := FlagWords(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: names a flag outside internal/cli: name the value, and let the CLI say which flag carried it", f)
	}
	for file := range ArgvBuilders {
		if _, err := os.Stat(filepath.Join("..", "..", file)); err != nil {
			t.Errorf("ArgvBuilders names %s, which is gone: drop it from the list", file)
		}
	}
}

// TestFlagWordsSeesFlags runs FlagWords on a module whose library names
// flags in an error, a Sprintf and a plain string, builds them with a
// format or a +, writes a throttlelab command line with a short flag, speaks
// of flags, or writes what limitmap once wrote ("--limit FROM:TO:STEPS is
// needed"), beside what it must let pass: a struct tag, a comment, the
// CLI, a test file, another tool's flags (docker --cpus, kubectl -n), an
// argv list with "--" as an element, dashes in prose.
func TestFlagWordsSeesFlags(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("lib/lib.go", `package lib

import "fmt"

// Give --csv a file (a comment may name a flag).
type T struct {
	X int `+"`json:\"x\" flag:\"--x\"`"+`
}

func E(n int) error { return fmt.Errorf("--cores %d: too many", n) }
func S() string     { return fmt.Sprintf("(sample longer with --duration)") }
func P() string     { return "use --all for every row" }
func Ok() string    { return "a--b, x --, 10 -- 20, docker --cpus 1" }
func F(name string) error { return fmt.Errorf("--%s: bad", name) }
func C(name string) string { return "give --" + name }
func R() string     { return "run throttlelab advise -o json" }
func W() string     { return "the window flag wants a duration" }
func L() error      { return fmt.Errorf("--limit FROM:TO:STEPS is needed, such as --limit 100m:1:10") }
func K() string     { return "port-forward with kubectl -n monitoring port-forward svc/prometheus 9090" }
func A() []string   { return []string{"runuser", "-u", "postgres", "--", "initdb"} }
func D() string     { return "a - b, x -1, throttlelab report DIR" }
`)
	write("lib/lib_test.go", `package lib

const x = "--csv"
`)
	write("internal/cli/cli.go", `package cli

const x = "--csv"
`)
	found, err := FlagWords(root)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(found, "\n")
	want := []string{
		`lib/lib.go:10: "--cores %d: too many"`,
		`lib/lib.go:11: "(sample longer with --duration)"`,
		`lib/lib.go:12: "use --all for every row"`,
		`lib/lib.go:14: "--%s: bad"`,
		`lib/lib.go:15: "give --"`,
		`lib/lib.go:16: "run throttlelab advise -o json"`,
		`lib/lib.go:17: "the window flag wants a duration"`,
		`lib/lib.go:18: "--limit FROM:TO:STEPS is needed, such as --limit 100m:1:10"`,
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("FlagWords missed %s; found:\n%s", w, got)
		}
	}
	if len(found) != len(want) {
		t.Errorf("FlagWords found %d, want the %d above:\n%s", len(found), len(want), got)
	}
}
