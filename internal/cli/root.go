// Package cli implements the throttlelab command line. Each subcommand lives in a
// file of its own and only turns flags into library calls.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// Version is the tool version, set at build time with -ldflags "-X ...cli.Version=...".
var Version = "dev"

// usagef returns a usage error; the message should name the flag or argument at fault.
func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// Main runs the command line with os.Args and returns the exit status.
// Installed as kubectl-throttlelab, it is the kubectl plugin "kubectl
// throttlelab" and its help says so.
func Main() int {
	return runAs(displayName(os.Args[0]), os.Args[1:], os.Stdout, os.Stderr)
}

// Run runs the command line with args, writing to stdout and stderr, and returns the
// exit status (exit.go: 0 fine, 1 over target or findings, 2 bad input, 3 a data
// source unreachable or empty).
func Run(args []string, stdout, stderr io.Writer) int {
	return runAs("throttlelab", args, stdout, stderr)
}

// runAs is Run under a display name ("kubectl throttlelab" as a plugin).
func runAs(name string, args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	if name != "throttlelab" {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: name}
		root.Long = strings.ReplaceAll(root.Long, "throttlelab help ", name+" help ")
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	return exitCode(err)
}

// The command groups of the top-level help, as kubectl groups its
// commands. A new command sets its GroupID to one of these in its newXCmd
// (or is given one in newRootCmd); a command without one is listed under
// "Additional Commands".
const (
	groupExperiments = "experiments"
	groupObserve     = "observe"
	groupKubernetes  = "kubernetes"
	groupWorkload    = "workload"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "throttlelab",
		Short: "Measure what CPU limits do to services",
		Long: `throttlelab measures the latency and throttling CPU limits cause, and advises limits.
Concepts: throttlelab help quota (limits, periods, throttling), throttlelab help spec.`,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	groupCmd(root)
	// The commands in the order they are added (most used first), as kubectl lists them.
	cobra.EnableCommandSorting = false
	// Flag parse errors are bad input: exit 2 with the flag named.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddGroup(
		&cobra.Group{ID: groupExperiments, Title: "Experiments:"},
		&cobra.Group{ID: groupObserve, Title: "Observe and advise:"},
		&cobra.Group{ID: groupKubernetes, Title: "Kubernetes:"},
		&cobra.Group{ID: groupWorkload, Title: "Workload processes:"},
	)
	// completion still works; it just takes no line of the help.
	root.CompletionOptions.HiddenDefaultCmd = true
	in := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			if c.GroupID == "" {
				c.GroupID = group
			}
			root.AddCommand(c)
		}
	}
	in(groupExperiments, newRunCmd(), newSimCmd(), newMapCmd(), newReportCmd(), newPresetsCmd(), newValidateCmd())
	in(groupObserve, newTopCmd(), newAdviseCmd())
	in(groupKubernetes, newK8sCmd(), newAgentCmd(), newCheckCmd())
	// version is --version's long form (kubectl and helm have both): off the
	// list, which --version's line already covers.
	version := newVersionCmd()
	version.Hidden = true
	root.AddCommand(version)
	// burst and noise are helper processes that run and the k8s manifests
	// start: hidden from the list, documented in their own --help.
	burst, noise := newBurstCmd(), newNoiseCmd()
	burst.Hidden, noise.Hidden = true, true
	in(groupWorkload, newServeCmd(), newLoadCmd(), newTilesCmd(), burst, noise)
	// The topics are named in Long, not listed: the list would cost the
	// help its one screen.
	for _, t := range helpTopics() {
		t.Hidden = true
		root.AddCommand(t)
	}
	return root
}

// exactArgs is cobra.ExactArgs returning a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %d argument(s), got %d: see %s --help", cmd.CommandPath(), n, len(args), cmd.CommandPath())
		}
		return nil
	}
}

// groupCmd makes a command that holds subcommands refuse an unknown one with
// a usage error (cobra's own is plain text), and print its help when called
// alone.
func groupCmd(cmd *cobra.Command) {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		return unknownCommand(cmd, args[0])
	}
}

func unknownCommand(cmd *cobra.Command, name string) error {
	hint := ""
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		hint = " (did you mean " + strings.Join(s, " or ") + "?)"
	}
	return usagef("unknown command %q for %q%s: %s --help lists them", name, cmd.CommandPath(), hint, cmd.CommandPath())
}

// noArgs refuses arguments to a command that takes none (a group's own
// action, such as presets listing them) as an unknown subcommand.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return unknownCommand(cmd, args[0])
	}
	return nil
}

func contextWithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}
