// Package toptest lays out the fake cgroup trees of top's tests (testdata/*.txtar
// in package top) in a temporary directory, for tests of top and of the
// command that drive it on a tree whose every file they know.
package toptest

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Trees lists the fake trees: v1 with cpu and cpuacct apart, v1 joined with
// Kubernetes (cgroupfs driver), v2 with Kubernetes (systemd driver), a hybrid
// host with the cpu controller on v2.
var Trees = []string{"v1-split", "v1-joined-kubepods-cgroupfs", "v2-kubepods-systemd", "hybrid-v2-cpu"}

// FakeRoot writes the files of fake tree name ("-- path --" headers in
// top/testdata/NAME.txtar, each followed by the file's content) into a new
// temporary directory and returns it, to be passed as a root path.
func FakeRoot(t testing.TB, name string) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "testdata", name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	var file string
	var content []byte
	flush := func() {
		if file == "" {
			return
		}
		p := filepath.Join(root, file)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if h, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "-- "); ok && strings.HasSuffix(h, " --") {
			flush()
			file, content = strings.TrimSuffix(h, " --"), nil
			continue
		}
		if file != "" {
			content = append(content, line...)
		}
	}
	flush()
	return root
}
