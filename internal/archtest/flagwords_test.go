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
// flags in an error, a Sprintf and a plain string, beside what it must
// let pass: a struct tag, a comment, the CLI, a test file, another tool's
// flag.
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
	for _, want := range []string{`lib/lib.go:10: "--cores %d: too many"`, `lib/lib.go:11: "(sample longer with --duration)"`, `lib/lib.go:12: "use --all for every row"`} {
		if !strings.Contains(got, want) {
			t.Errorf("FlagWords missed %s; found:\n%s", want, got)
		}
	}
	if len(found) != 3 {
		t.Errorf("FlagWords found %d, want the 3 above:\n%s", len(found), got)
	}
}
