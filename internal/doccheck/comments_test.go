package doccheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepoCommentFigures: no Go comment of the repository holds a measured
// figure (they go to docs/performance.md, dated, or to a benchmark's output).
func TestRepoCommentFigures(t *testing.T) {
	found, err := CommentFigures("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: a measured figure in a comment: move it to docs/ with \"(YYYY-MM-DD, the reference machine)\" (docs/methodology.md), or say what and why without it", f)
	}
}

// TestCommentFigures feeds CommentFigures the measured figures comments
// once held, and what it must let pass: a design value, a measurement
// word without a figure in its clause, figures in code and strings.
func TestCommentFigures(t *testing.T) {
	root := t.TempDir()
	src := `package lib

// TestBounded: a huge range is refused (it took 364 MB and a second before).
func TestBounded() {}

// Peak: a slice per CPU (5 ms each: measured up to 0.29 cores under 0.2 on 2 CPUs).
const Peak = 1

// Network (0.12 ms each way) was measured with the old load generator.
const Network = 2

// On the reference machine small tiles take under 10 ms.
const Small = 3

// The pinned core took 0.87x the shared pool's p99.
const Pinned = 4

// Every 10 ms a sample is read; calibration is about 100 ms of CPU.
const Every = 5

// rounds runs for a minute of 10 ms rounds, and returns the time it took.
func rounds() { _ = "measured 5 ms" }

// The study measured it on the kernel, with a 10 ms period.
const Study = 6
`
	if err := os.MkdirAll(filepath.Join(root, "lib", "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "lib", "lib.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "lib", "testdata", "x.go"), []byte("package x\n\n// It took 5 ms.\nconst X = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	found, err := CommentFigures(root)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(found, "\n")
	want := []string{"lib/lib.go:3:", "lib/lib.go:6:", "lib/lib.go:9:", "lib/lib.go:12:", "lib/lib.go:15:"}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("missed %s; found:\n%s", w, got)
		}
	}
	if len(found) != len(want) {
		t.Errorf("found %d, want the %d above:\n%s", len(found), len(want), got)
	}
}
