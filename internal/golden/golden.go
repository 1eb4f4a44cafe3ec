// Package golden compares a test's output with a committed golden file, and
// with -update rewrites the file instead: the one -update flag of every
// package's tests.
//
//	var b bytes.Buffer
//	render(&b)
//	golden.Compare(t, filepath.Join("testdata", "table.golden"), b.Bytes())
//
// go test ./pkg -update rewrites the files; review the diff before committing.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files the tests compare with (review the diff before committing)")

// Update reports whether the tests run with -update: for a test that must do
// more than Compare then (remove stale files, write pictures).
func Update() bool { return *update }

// Compare fails t when got differs from the file at path, naming the first
// line that differs; with -update it writes got there (making its directory)
// and passes.
func Compare(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (%d bytes, golden %d): %s\n(go test -update rewrites it if the change is meant)", path, len(got), len(want), FirstDiff(want, got))
	}
}

// FirstDiff describes the first line where got differs from want.
func FirstDiff(want, got []byte) string {
	w, g := bytes.Split(want, []byte("\n")), bytes.Split(got, []byte("\n"))
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b []byte
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if i >= len(w) || i >= len(g) || !bytes.Equal(a, b) {
			return fmt.Sprintf("line %d:\n  golden: %.300q\n  got:    %.300q", i+1, a, b)
		}
	}
	return "no line differs"
}
