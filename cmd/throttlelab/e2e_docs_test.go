package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/internal/doccheck"
)

// docRunnable are the commands of the docs this test runs as written: they
// need no root, touch nothing outside their working directory, and finish in
// seconds. Every other doc command is parsed against the command tree by
// internal/cli's TestDocCommandsParse instead.
var docRunnable = []string{"presets", "presets show", "validate", "sim", "advise", "k8s render"}

// docLive are the flags that make a runnable command read a live host or
// cluster (Prometheus, an agent, the API server) or
// write a file the docs do not mean to leave: such a line is only parsed.
var docLive = []string{"--pid", "--cgroup", "--pod", "--prometheus", "--agent", "--apply", "--compare", "--html", "--save-csv", "--out"}

// TestDocCommandsRun runs, with the built binary, every command of README.md
// and docs/*.md that needs no root and is quick (docRunnable), in a scratch
// directory that sees the repository's examples and test data, and requires
// exit status 0. A command that names a file the repository does not hold
// (my.yaml, usage.csv) is only parsed, and says so.
func TestDocCommandsRun(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := doccheck.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	for _, d := range []string{"examples", "report", "cmd"} {
		if err := os.Symlink(filepath.Join(root, d), filepath.Join(work, d)); err != nil {
			t.Fatal(err)
		}
	}
	ran := 0
	for _, c := range cmds {
		if c.Sudo || !isRunnable(c.Args) {
			continue
		}
		if _, ok := doccheck.PendingFor(c.Args); ok {
			continue
		}
		t.Run(c.Pos(), func(t *testing.T) {
			for _, a := range c.Args {
				if looksLikeFile(a) {
					if _, err := os.Stat(filepath.Join(root, a)); err != nil {
						t.Skipf("%s names %s, which the repository does not hold: parsed only", c.Text, a)
					}
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, c.Args...)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "GOMAXPROCS=2")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s: %s: %v\n%s", c.Pos(), c.Text, err, tail(string(out), 20))
			}
		})
		ran++
	}
	if ran < 10 {
		t.Errorf("ran %d doc commands; the docs hold more runnable ones (presets, validate, sim, advise --csv)", ran)
	}
}

// isRunnable says whether args start with a docRunnable command's path and
// use none of docLive's flags.
func isRunnable(args []string) bool {
	for _, a := range args {
		for _, f := range docLive {
			if a == f || strings.HasPrefix(a, f+"=") {
				return false
			}
		}
	}
	for _, p := range docRunnable {
		path := strings.Fields(p)
		if len(args) >= len(path) && slices.Equal(args[:len(path)], path) {
			// "presets" alone, not "presets show" counted as it.
			if p == "presets" && len(args) > 1 && !strings.HasPrefix(args[1], "-") {
				continue
			}
			return true
		}
	}
	return false
}

// looksLikeFile says whether a doc command's argument names a file.
func looksLikeFile(a string) bool {
	if strings.HasPrefix(a, "-") || strings.Contains(a, "://") || strings.Contains(a, ":") {
		return false
	}
	return strings.Contains(a, "/") || strings.HasSuffix(a, ".yaml") || strings.HasSuffix(a, ".csv")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
