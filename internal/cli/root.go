// Package cli implements the throttlelab command line. Each subcommand lives in a
// file of its own and only turns flags into library calls.
package cli

import (
	"context"
	"errors"
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

// usageError marks bad input: the command exits with status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitError ends the command with a given exit status.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// usagef returns a usage error; the message should name the flag or argument at fault.
func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// Main runs the command line with os.Args and returns the exit status.
func Main() int {
	return Run(os.Args[1:], os.Stdout, os.Stderr)
}

// Run runs the command line with args, writing to stdout and stderr, and returns the
// exit status: 0 on success, 2 for bad input, 1 for any other failure.
func Run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "throttlelab: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") {
		return 2
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "throttlelab",
		Short: "Measure what CPU limits do to services",
		Long: `throttlelab runs CPU-bound workloads under real CPU limits (CFS quota, period,
burst, shares, cpusets) and measures the latency and throttling that result.`,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// Flag parse errors are bad input: exit 2 with the flag named.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newRunCmd(), newSimCmd(), newReportCmd(), newPresetsCmd(), newServeCmd(), newLoadCmd(), newTilesCmd(), newBurstCmd(), newNoiseCmd(), newTopCmd())
	return root
}

// exactArgs is cobra.ExactArgs returning a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

func contextWithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}
