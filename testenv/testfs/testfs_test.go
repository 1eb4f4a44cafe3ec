package testfs

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTree(t *testing.T) {
	root := Tree(t, map[string]string{"a/b/c.txt": "x\n", "d": ""})
	for name, want := range map[string]string{"a/b/c.txt": "x\n", "d": ""} {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", name, b, err, want)
		}
	}
}
