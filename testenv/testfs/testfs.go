// Package testfs writes fake file trees for tests: a host's /proc and
// /sys/fs/cgroup under a temporary root, a results directory to pack.
package testfs

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile writes content to root/name, making its directories.
func WriteFile(t testing.TB, root, name string, content []byte) {
	t.Helper()
	p := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Tree writes files (path relative to root: content) into a new temporary
// directory and returns it.
func Tree(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		WriteFile(t, root, name, []byte(content))
	}
	return root
}
