package doccheck

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestExtract(t *testing.T) {
	src := strings.Join([]string{
		"# Title",  // 1
		"",         // 2
		"    make", // 3
		"    sudo bin/throttlelab run examples/limits.yaml", // 4
		"", // 5
		"Some prose that names throttlelab run --nope in text.", // 6
		"",    // 7
		"```", // 8
		"throttlelab advise --csv 'a b.csv' --limit 300m \\",      // 9
		"    --json   # a comment",                                // 10
		"throttlelab: my.yaml:9: an error message, not a command", // 11
		"flock /tmp/x.lock throttlelab top --once | jq .",         // 12
		"```",             // 13
		"  - a list item", // 14
		"    throttlelab continuing the item is still a block only after a blank line", // 15
		"", // 16
		"    $ throttlelab presets show \"f01-logjam\" > my.yaml", // 17
	}, "\n")
	got, err := Extract("x.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		line int
		sudo bool
		args []string
	}{
		{4, true, []string{"run", "examples/limits.yaml"}},
		{9, false, []string{"advise", "--csv", "a b.csv", "--limit", "300m", "--json"}},
		{12, false, []string{"top", "--once"}},
		{17, false, []string{"presets", "show", "f01-logjam"}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d commands, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Line != w.line || g.Sudo != w.sudo || !slices.Equal(g.Args, w.args) || g.File != "x.md" {
			t.Errorf("command %d: got %s sudo=%v %q, want x.md:%d sudo=%v %q", i, g.Pos(), g.Sudo, g.Args, w.line, w.sudo, w.args)
		}
	}
}

func TestExtractUnbalancedQuote(t *testing.T) {
	_, err := Extract("x.md", []byte("```\nthrottlelab run 'examples\n```\n"))
	if err == nil || !strings.Contains(err.Error(), "x.md:2") {
		t.Fatalf("got %v, want an error naming x.md:2", err)
	}
}

func TestPendingFor(t *testing.T) {
	saved := Pendings
	defer func() { Pendings = saved }()
	Pendings = []Pending{{Path: "agent", Reason: "r"}, {Path: "advise", Flag: "prometheus", Reason: "r"}}
	if _, ok := PendingFor([]string{"agent", "--listen", ":9101"}); !ok {
		t.Error("agent: not pending")
	}
	if _, ok := PendingFor([]string{"advise", "--prometheus=http://p:9090"}); !ok {
		t.Error("advise --prometheus=: not pending")
	}
	if p, ok := PendingFor([]string{"advise", "--csv", "u.csv"}); ok {
		t.Errorf("advise --csv: pending as %+v", p)
	}
}

// TestRepoLinks checks the repository's own README.md and docs/: every
// relative link reaches a file, and every #anchor a heading of it.
func TestRepoLinks(t *testing.T) {
	for f, why := range PendingFiles {
		t.Logf("links to %s are not checked yet: %s", f, why)
		if _, err := os.Stat(filepath.Join("../..", f)); err == nil {
			t.Errorf("%s exists now: remove it from PendingFiles", f)
		}
	}
	broken, err := BrokenLinks("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Error(b)
	}
}

func TestBrokenLinks(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "docs"), 0o755)
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("[a](docs/a.md#how-it-works-run) [b](docs/a.md#nope) [c](docs/none.md) [d](https://x.org/y)\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "docs", "a.md"), []byte("# A\n\n## How it works (`run`)\n\n[up](../README.md)\n"), 0o644)
	got, err := BrokenLinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md: docs/a.md#nope: docs/a.md has no heading #nope",
		"README.md: docs/none.md: no file docs/none.md",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestRepoPaths checks the repository's README.md and docs/: every path of
// the tree named in a code span exists.
func TestRepoPaths(t *testing.T) {
	broken, err := BrokenPaths("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Errorf("%s: no such path in the tree", b)
	}
}

func TestBrokenPaths(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "docs"), 0o755)
	os.MkdirAll(filepath.Join(dir, "cgroup"), 0o755)
	os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
	os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("/bin/\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "cgroup", "peak_test.go"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("`cgroup/peak_test.go` `top/peak_test.go` `cgroup/nope.go:12` "+
		"`cgroup/*.go` `cgroup/*.txtar` `results/x/report.html` `bin/throttlelab` `/sys/fs/cgroup` `k8s render` `docs/`\n"), 0o644)
	got, err := BrokenPaths(dir)
	if err != nil {
		t.Fatal(err)
	}
	// top/ is no directory of this tree, so top/peak_test.go is not taken
	// for a path of it; cgroup/ is.
	want := []string{"README.md: cgroup/nope.go", "README.md: cgroup/*.txtar"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestRepoFigures checks the repository's README.md and docs/: every
// measured figure carries a date and a machine (the rule in figures.go and
// docs/testing.md).
func TestRepoFigures(t *testing.T) {
	undated, err := UndatedFigures("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range undated {
		t.Errorf("%s: a measured figure without a date and a machine (write \"(YYYY-MM-DD, the reference machine)\", docs/methodology.md)", u)
	}
}

func TestUndatedFigures(t *testing.T) {
	src := strings.Join([]string{
		"# Page",                               // 1
		"",                                     // 2
		"A figure measured at 12 ms, undated.", // 3
		"",                                     // 4
		"Measured 0.5% of a core (2026-11-26, the reference machine).", // 5
		"", // 6
		"## Speed (2026-11-26, the reference machine)", // 7
		"",             // 8
		"It took 3 s.", // 9
		"",             // 10
		"## Other",     // 11
		"",             // 12
		"Measured on 2026-11-26 on the reference machine:", // 13
		"",                 // 14
		"| x | took 4 s |", // 15
		"",                 // 16
		"## Last",          // 17
		"",                 // 18
		"What was measured is kept. It holds 5 ms requests.", // 19: not in one sentence
		"",                        // 20
		"| row | measured 7 ms |", // 21
		"<!-- generated: throttlelab presets -->", // 22
		"```",                    // 23
		"measured 9 ms",          // 24
		"```",                    // 25
		"<!-- end generated -->", // 26
	}, "\n")
	got := undatedIn("x.md", src)
	want := []string{"x.md:3: A figure measured at 12 ms, undated.", "x.md:21: | row | measured 7 ms |"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestBlocks(t *testing.T) {
	src := "# A\n\n<!-- generated: throttlelab presets show f01-logjam (lines 2-3) -->\n```\nb\nc\n```\n<!-- end generated -->\n"
	bs, err := Blocks("x.md", src)
	if err != nil || len(bs) != 1 {
		t.Fatalf("%v %+v", err, bs)
	}
	b := bs[0]
	if b.Line != 3 || !slices.Equal(b.Args, []string{"presets", "show", "f01-logjam"}) || b.From != 2 || b.To != 3 || b.Body != "b\nc\n" {
		t.Errorf("%+v", b)
	}
	if got := b.Select("a\nb\nX\nd\n"); got != "b\nX\n" {
		t.Errorf("select %q", got)
	}
	// A --help output's flags, by name, wherever the help puts them.
	fs, err := Blocks("x.md", "<!-- generated: throttlelab advise --help (flags max-throttled output) -->\n```\n```\n<!-- end generated -->\n")
	if err != nil || len(fs) != 1 || !slices.Equal(fs[0].Flags, []string{"max-throttled", "output"}) {
		t.Fatalf("flags block: %v %+v", err, fs)
	}
	help := "Usage:\n  throttlelab advise [flags]\n--max-throttled in the long help\n\nFlags:\n      --max-delay duration   d\n      --max-throttled string   t (see --max-throttled-x)\n      --max-throttled-x int   x\n  -o, --output string   o\n"
	if got := fs[0].Select(help); got != "      --max-throttled string   t (see --max-throttled-x)\n  -o, --output string   o\n" {
		t.Errorf("select flags %q", got)
	}
	out, err := Rewrite(src, b.Line, "b\nX\n")
	if err != nil || !strings.Contains(out, "```\nb\nX\n```\n<!-- end generated -->") {
		t.Errorf("rewrite: %v\n%s", err, out)
	}
	for _, bad := range []string{
		"<!-- generated: ls -l -->\n```\n```\n<!-- end generated -->\n",
		"<!-- generated: throttlelab presets -->\nno fence\n",
		"<!-- generated: throttlelab presets -->\n```\nx\n```\n",
	} {
		if _, err := Blocks("x.md", bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestRepoHistoryRefs checks the repository's README.md and docs/: no page
// refers to an issue or a run by number.
func TestRepoHistoryRefs(t *testing.T) {
	refs, err := HistoryRefs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refs {
		t.Errorf("%s: history by number (say what is true now; history lives in git)", r)
	}
}

func TestHistoryRefs(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "docs"), 0o755)
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("as issue 27 asked\nburns run 1.6% over\nthe rig's run #4 (2026-11-24)\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "docs", "a.md"), []byte("# A\n\nIn run 19 the agent\n"), 0o644)
	got, err := HistoryRefs(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"README.md:1: issue 27", "docs/a.md:3: run 19"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
