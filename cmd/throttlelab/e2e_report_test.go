package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// copyDir copies a fixture results directory, so the report is written into
// a scratch copy.
func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), filepath.Base(from))
	if out, err := exec.Command("cp", "-r", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	return to
}

func TestReportCommand(t *testing.T) {
	dir := copyDir(t, "../../report/testdata/limits")
	r := run(t, "report", dir)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "<svg class=\"chart\"") || !strings.Contains(r.stdout, "unlimited (reference)") || strings.Contains(r.stdout, "\x1b[") {
		t.Errorf("report or table wrong (no colour off a terminal):\n%s", r.stdout)
	}
	// Two dirs side by side, into a named file.
	out := filepath.Join(t.TempDir(), "cmp.html")
	r = run(t, "report", "--html", out, dir, "../../report/testdata/limits-b")
	if r.code != 0 || !strings.Contains(r.stdout, "limits-b: limited") {
		t.Fatalf("compare: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(out); err != nil {
		t.Error(err)
	}
}

func TestReportBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report"}, "give at least one results directory"},
		{[]string{"report", t.TempDir()}, "not a results directory"},
		{[]string{"report", "--max-instances", "0", "x"}, "--max-instances 0"},
	} {
		r := run(t, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", c.args, r.code, r.stderr, c.want)
		}
	}
}
