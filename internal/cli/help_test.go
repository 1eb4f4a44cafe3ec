package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/advise"
)

// helpVerbs are the verbs a command's Short may start with: a Short says
// what the command does ("Run an experiment"), not what it is. A new
// command's verb joins the list.
var helpVerbs = map[string]bool{
	"Run": true, "Simulate": true, "Map": true, "Write": true, "List": true, "Print": true,
	"Check": true, "Watch": true, "Recommend": true, "Render": true, "Wait": true, "Drive": true,
	"Build": true, "Recompute": true, "Spin": true, "Explain": true, "Describe": true,
	"Measure": true, "Serve": true, "Show": true, "Gate": true, "Keep": true, "Compare": true,
}

// TestHelpFitsOneScreen checks the top-level help: under 40 lines, grouped,
// without the helper processes.
func TestHelpFitsOneScreen(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Run([]string{"--help"}, &out, &errb); code != 0 {
		t.Fatalf("--help exited %d: %s", code, errb.String())
	}
	help := out.String()
	if n := strings.Count(help, "\n"); n >= 40 {
		t.Errorf("throttlelab --help is %d lines, want under 40:\n%s", n, help)
	}
	for _, g := range newRootCmd().Groups() {
		if !strings.Contains(help, g.Title) {
			t.Errorf("group %q is not in the help", g.Title)
		}
	}
	for _, hidden := range []string{"burst", "noise"} {
		if strings.Contains(help, "\n  "+hidden+" ") {
			t.Errorf("the helper process %s is listed in the top-level help", hidden)
		}
	}
}

// TestEveryCommandHelp checks every command, hidden ones and help topics
// too: a Short that starts with a verb, no flags in Use (cobra lists them),
// an Example, and a group for each listed top-level command.
func TestEveryCommandHelp(t *testing.T) {
	root := newRootCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Name() == "help" || sub.Name() == "completion" {
				continue // cobra's own
			}
			path := sub.CommandPath()
			first, _, _ := strings.Cut(sub.Short, " ")
			if !helpVerbs[strings.TrimSuffix(first, ",")] {
				t.Errorf("%s: Short %q does not start with a verb (%s, ...): say what the command does", path, sub.Short, "Run, Print, Check")
			}
			if strings.HasSuffix(sub.Short, ".") {
				t.Errorf("%s: Short %q ends with a full stop", path, sub.Short)
			}
			if strings.Contains(" "+sub.Use, " -") {
				t.Errorf("%s: Use %q names flags or options: cobra lists the flags", path, sub.Use)
			}
			if strings.TrimSpace(sub.Example) == "" {
				t.Errorf("%s has no Example", path)
			}
			if c == root && !sub.Hidden && sub.GroupID == "" && sub.IsAvailableCommand() {
				t.Errorf("%s has no group: give it one of the groups in root.go", path)
			}
			walk(sub)
		}
	}
	walk(root)
}

// TestHelpTopics checks that the topics the help names are there.
func TestHelpTopics(t *testing.T) {
	for topic, want := range map[string]string{"quota": "nr_throttled", "spec": "apiVersion: throttlelab/v1alpha1"} {
		var out, errb bytes.Buffer
		if code := Run([]string{"help", topic}, &out, &errb); code != 0 || !strings.Contains(out.String(), want) {
			t.Errorf("throttlelab help %s: exit %d, output lacks %q:\n%s%s", topic, code, want, out.String(), errb.String())
		}
	}
}

// TestDeprecatedSpellings: each old spelling of a renamed flag still works,
// does what the new one does, and says so in one line on stderr; the help
// shows only the new one.
func TestDeprecatedSpellings(t *testing.T) {
	csv := filepath.Join("..", "..", "cmd", "throttlelab", "testdata", "advise-usage.csv")
	for _, tt := range []struct{ old, now []string }{
		{[]string{"advise", "--csv", csv, "--grid", "4", "--json"}, []string{"advise", "--csv", csv, "--grid", "4", "-o", "json"}},
		{[]string{"check", "--lint", "--json", "../../fleet/testdata/manifests/shop.yaml"}, []string{"check", "--lint", "-o", "json", "../../fleet/testdata/manifests/shop.yaml"}},
		{[]string{"check", "--lint", "--max-delay-p99", "5ms", "../../fleet/testdata/manifests/shop.yaml"}, []string{"check", "--lint", "--max-delay", "5ms", "../../fleet/testdata/manifests/shop.yaml"}},
		{[]string{"check", "--lint", "-v", "../../fleet/testdata/manifests/shop.yaml"}, []string{"check", "--lint", "--verbose", "../../fleet/testdata/manifests/shop.yaml"}},
	} {
		var oldOut, oldErr, nowOut, nowErr bytes.Buffer
		oldCode, nowCode := Run(tt.old, &oldOut, &oldErr), Run(tt.now, &nowOut, &nowErr)
		notice := strings.SplitN(oldErr.String(), "\n", 2)[0]
		if oldCode != nowCode || oldOut.String() != nowOut.String() || !strings.Contains(notice, "is deprecated: use") || oldErr.String() != notice+"\n"+nowErr.String() {
			t.Errorf("%v: exit %d, stderr %q; %v: exit %d, stderr %q: want the same output and one deprecation line more", tt.old, oldCode, oldErr.String(), tt.now, nowCode, nowErr.String())
		}
	}
	for _, tt := range []struct{ cmd, hidden string }{{"advise", "--json"}, {"check", "--max-delay-p99"}, {"check", "-v,"}, {"agent", "--target"}, {"report", "--out"}, {"top", "--json"}} {
		var out, errb bytes.Buffer
		Run([]string{tt.cmd, "--help"}, &out, &errb)
		if strings.Contains(out.String(), tt.hidden+" ") || strings.Contains(out.String(), "deprecated") {
			t.Errorf("%s --help shows %s or a deprecated flag:\n%s", tt.cmd, tt.hidden, out.String())
		}
	}
}

// TestOneVocabulary: advise, check and the agent take the throttled share
// and the delay budget under the same names, with the same defaults, from
// advise.DefaultTarget; -o/--output is the format wherever there is one.
func TestOneVocabulary(t *testing.T) {
	root := newRootCmd()
	for _, name := range []string{"advise", "check", "agent"} {
		cmd, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		thr, delay := cmd.Flags().Lookup("max-throttled"), cmd.Flags().Lookup("max-delay")
		if thr == nil || delay == nil {
			t.Errorf("%s: no --max-throttled or --max-delay", name)
			continue
		}
		if thr.DefValue != pct(advise.DefaultMaxThrottled) || delay.DefValue != "0s" {
			t.Errorf("%s: --max-throttled %s, --max-delay %s: want %s and 0s", name, thr.DefValue, delay.DefValue, pct(advise.DefaultMaxThrottled))
		}
		if cmd.Flags().Lookup("target") != nil && !cmd.Flags().Lookup("target").Hidden {
			t.Errorf("%s: --target is shown; it is load's instance URL only", name)
		}
	}
	for _, name := range []string{"advise", "check", "top"} {
		cmd, _, _ := root.Find([]string{name})
		if o := cmd.Flags().ShorthandLookup("o"); o == nil || o.Name != "output" {
			t.Errorf("%s: no -o/--output", name)
		}
	}
	root.InitDefaultVersionFlag()
	if v := root.Flags().ShorthandLookup("v"); v == nil || v.Name != "version" {
		t.Errorf("root: -v is not --version")
	}
	for _, c := range root.Commands() {
		if v := c.Flags().ShorthandLookup("v"); v != nil && !v.Hidden {
			t.Errorf("%s: -v is --%s; at the root it is --version", c.Name(), v.Name)
		}
		if o := c.Flags().Lookup("out"); o != nil && !o.Hidden && o.Usage != "" && !strings.Contains(o.Usage, "directory") {
			t.Errorf("%s: --out is %q: --out is a directory everywhere", c.Name(), o.Usage)
		}
	}
}
