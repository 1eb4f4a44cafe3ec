package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/throttlelab/throttlelab/internal/doccheck"
	"github.com/throttlelab/throttlelab/internal/golden"
)

// TestDocCommandsParse checks every throttlelab command line in README.md and
// docs/*.md against the real command tree: the command exists, its flags
// exist and take the values written, and it has as many arguments as it
// accepts. Commands and flags still to land are skipped through
// doccheck.Pendings, each skip saying why; an entry whose command or flag now
// exists fails, so the list shrinks as changes land.
func TestDocCommandsParse(t *testing.T) {
	cmds, err := doccheck.Load("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) < 40 {
		t.Fatalf("found %d commands in the docs; the extraction is broken (README.md alone has more than 10)", len(cmds))
	}
	for _, c := range cmds {
		t.Run(c.Pos(), func(t *testing.T) {
			if p, ok := doccheck.PendingFor(c.Args); ok {
				t.Skipf("pending: %s (%s)", c.Text, p.Reason)
			}
			if err := parseDocCommand(c.Args); err != nil {
				t.Errorf("%s: %s: %v", c.Pos(), c.Text, err)
			}
		})
	}
}

// TestDocPendingsStillPending fails once a pending command or flag exists:
// then its entry must leave doccheck.Pendings, and its docs are checked.
func TestDocPendingsStillPending(t *testing.T) {
	for _, p := range doccheck.Pendings {
		t.Logf("pending, skipped in the docs' checks: %s %s: %s", p.Path, p.Flag, p.Reason)
		cmd, rest, err := newRootCmd().Find(strings.Fields(p.Path))
		if err != nil || len(rest) > 0 || cmd.CommandPath() != "throttlelab "+p.Path {
			continue // the command does not exist yet
		}
		if p.Flag == "" || cmd.Flags().Lookup(p.Flag) != nil {
			t.Errorf("%q %s exists now: remove it from doccheck.Pendings", p.Path, p.Flag)
		}
	}
}

// TestDocCommandsHelp runs --help of every command the docs name, in process.
func TestDocCommandsHelp(t *testing.T) {
	cmds, err := doccheck.Load("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range cmds {
		if _, ok := doccheck.PendingFor(c.Args); ok {
			continue
		}
		cmd, _, err := newRootCmd().Find(c.Args)
		if err != nil {
			continue // TestDocCommandsParse reports it
		}
		path := strings.Fields(cmd.CommandPath())[1:]
		key := strings.Join(path, " ")
		if seen[key] {
			continue
		}
		seen[key] = true
		var out bytes.Buffer
		if code := Run(append(path, "--help"), &out, &out); code != 0 || !strings.Contains(out.String(), "Usage:") {
			t.Errorf("throttlelab %s --help: exit %d, output:\n%s", key, code, out.String())
		}
	}
}

// parseDocCommand resolves args on a fresh command tree as cobra would before
// running it, without running it.
func parseDocCommand(args []string) error {
	root := newRootCmd()
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	positional := cmd.Flags().Args()
	if cmd.HasAvailableSubCommands() && len(positional) > 0 {
		return unknownSub(cmd, positional[0])
	}
	if len(positional) > 0 && cmd == root {
		return unknownSub(cmd, positional[0])
	}
	if help, _ := cmd.Flags().GetBool("help"); help {
		return nil
	}
	return cmd.ValidateArgs(positional)
}

func unknownSub(cmd *cobra.Command, name string) error {
	return unknownCommand(cmd, name)
}

// TestParseDocCommandRefuses makes sure the check above can fail: a command,
// a subcommand, a flag or an argument count the tree does not have.
func TestParseDocCommandRefuses(t *testing.T) {
	for _, args := range [][]string{
		{"runx", "examples/limits.yaml"},
		{"presets", "shwo", "f01-logjam"},
		{"sim", "examples/limits.yaml", "--no-such-flag"},
		{"sim", "examples/limits.yaml", "--cores", "many"},
		{"map", "a.yaml", "b.yaml"}, // advise takes any number of workloads; map one spec
	} {
		if err := parseDocCommand(args); err == nil {
			t.Errorf("%q: accepted", args)
		}
	}
	if err := parseDocCommand([]string{"sim", "--cores", "16", "examples/limits.yaml"}); err != nil {
		t.Errorf("a valid command refused: %v", err)
	}
}

// TestDocGenerated runs the command of every generated block of the docs
// (doccheck.Block: the map's grid, the advise example, the presets' list,
// help excerpts) and compares its output with the block; go test -update
// rewrites the blocks. A figure the docs show from a command cannot go stale.
func TestDocGenerated(t *testing.T) {
	blocks, err := doccheck.LoadBlocks("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) < 4 {
		t.Fatalf("found %d generated blocks; the docs have at least 4 (map.md's grid, advise.md's example, presets.md's list, a help excerpt)", len(blocks))
	}
	tmp := t.TempDir()
	t.Chdir("../..") // the commands name paths from the repository's root
	// Last first: rewriting a block moves the lines of those after it in
	// its file, not of those before.
	for i := len(blocks) - 1; i >= 0; i-- {
		b := blocks[i]
		args := append([]string{}, b.Args...)
		// A command that writes results writes them to a scratch
		// directory, not into the tree.
		if cmd, _, err := newRootCmd().Find(args); err == nil && cmd.Flags().Lookup("out") != nil && !slices.Contains(args, "--out") {
			args = append(args, "--out", filepath.Join(tmp, strconv.Itoa(i)))
		}
		var out, errb bytes.Buffer
		if code := Run(args, &out, &errb); code != 0 {
			t.Errorf("%s: throttlelab %s: exit %d: %s", b.Pos(), strings.Join(b.Args, " "), code, errb.String())
			continue
		}
		got := b.Select(out.String())
		if got == b.Body {
			continue
		}
		if !golden.Update() {
			t.Errorf("%s: the output of throttlelab %s differs from the doc's (go test ./internal/cli -run TestDocGenerated -update rewrites it): %s",
				b.Pos(), strings.Join(b.Args, " "), golden.FirstDiff([]byte(b.Body), []byte(got)))
			continue
		}
		src, err := os.ReadFile(b.File)
		if err != nil {
			t.Fatal(err)
		}
		s, err := doccheck.Rewrite(string(src), b.Line, got)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(b.File, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
