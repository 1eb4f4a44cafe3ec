package main

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/agent"
	"github.com/throttlelab/throttlelab/internal/doccheck"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// TestDocAgentURLs runs every command of README.md and docs/*.md that names
// an agent (--agent URL) against a real agent on a fake node: the URL's
// port must be the one the agent listens on by default (a copied example
// must not get connection refused), and the command, with the URL's host
// and port pointed at the local agent, must succeed. The agent URLs in
// advise's and check's --help are held to the same port, and their example
// commands with --agent run the same way.
func TestDocAgentURLs(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := doccheck.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	local, _, _ := startAgent(t, watchtest.FakeRoot(t, "v2-kubepods-systemd"), t.TempDir())
	want := strconv.Itoa(agent.DefaultPort)
	ran := 0
	for _, c := range cmds {
		at, prefix := agentArg(c.Args)
		if at < 0 {
			continue
		}
		t.Run(c.Pos(), func(t *testing.T) {
			u, err := url.Parse(strings.TrimPrefix(c.Args[at], prefix))
			if err != nil || u.Scheme == "" || u.Host == "" {
				t.Fatalf("%s: %s: --agent %q is no base URL", c.Pos(), c.Text, c.Args[at])
			}
			if u.Port() != want {
				t.Fatalf("%s: %s: the agent listens on :%s, not :%s", c.Pos(), c.Text, want, u.Port())
			}
			args := append([]string(nil), c.Args...)
			args[at] = prefix + local + u.Path
			for _, a := range args {
				if looksLikeFile(a) {
					if _, err := os.Stat(filepath.Join(root, a)); err != nil {
						t.Skipf("%s names %s, which the repository does not hold: port checked, not run", c.Text, a)
					}
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, args...)
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s: %s (against %s): %v\n%s", c.Pos(), c.Text, local, err, tail(string(out), 20))
			}
		})
		ran++
	}
	if ran == 0 {
		t.Error("no --agent URL in the docs: docs/fleet-advice.md shows advise --agent; is the extraction broken?")
	}

	// The help's examples: every URL on the agent's port, and every example
	// command with --agent run against the local agent as the docs' are.
	urlRE := regexp.MustCompile(`--agent[ =](https?://[^ \n]+)`)
	helpRan := 0
	for _, sub := range []string{"advise", "check"} {
		out, err := exec.Command(binary, sub, "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("%s --help: %v\n%s", sub, err, out)
		}
		for _, m := range urlRE.FindAllStringSubmatch(string(out), -1) {
			u, err := url.Parse(m[1])
			if err != nil || u.Port() != want {
				t.Errorf("%s --help shows --agent %s: the agent listens on :%s", sub, m[1], want)
			}
		}
		for _, line := range strings.Split(string(out), "\n") {
			words := strings.Fields(line)
			if len(words) < 2 || words[0] != "throttlelab" || words[1] != sub || strings.ContainsAny(line, "|$'\"") {
				continue
			}
			at, prefix := agentArg(words)
			if at < 0 {
				continue
			}
			u, err := url.Parse(strings.TrimPrefix(words[at], prefix))
			if err != nil || u.Host == "" {
				t.Errorf("%s --help: %s: --agent %q is no base URL", sub, line, words[at])
				continue
			}
			args := append([]string(nil), words[1:]...)
			args[at-1] = prefix + local + u.Path
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			cmd := exec.CommandContext(ctx, binary, args...)
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			cancel()
			if err != nil {
				t.Errorf("%s --help: %s (against %s): %v\n%s", sub, strings.TrimSpace(line), local, err, tail(string(out), 20))
			}
			helpRan++
		}
	}
	if helpRan == 0 {
		t.Error("no example with --agent in advise's or check's --help ran: advise --help shows advise --agent; is the extraction broken?")
	}
	out, err := exec.Command(binary, "advise", "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), ":"+want) {
		t.Errorf("advise --help names no agent URL on :%s: %v\n%s", want, err, out)
	}
}

// agentArg returns the index of the word holding --agent's value in args
// and what precedes the value in it ("--agent=" or nothing), or -1.
func agentArg(args []string) (int, string) {
	for i, a := range args {
		if a == "--agent" && i+1 < len(args) {
			return i + 1, ""
		}
		if strings.HasPrefix(a, "--agent=") {
			return i, "--agent="
		}
	}
	return -1, ""
}
