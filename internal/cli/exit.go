package cli

import (
	"errors"

	"github.com/throttlelab/throttlelab/demand"
	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/fleet"
	"github.com/throttlelab/throttlelab/k8s"
	"github.com/throttlelab/throttlelab/source"
)

// The exit statuses, the same in every command (docs/cli.md holds the
// table scripts read; TestExitCodes holds every command to it).
const (
	// ExitOK: done, and nothing over its target.
	ExitOK = 0
	// ExitOver: a limit over its target (check), findings (check --lint),
	// or a failure none of the others names.
	ExitOver = 1
	// ExitUsage: bad input or usage (a flag, an argument, a spec, a
	// manifest, a name that does not exist).
	ExitUsage = 2
	// ExitSource: a data source could not be reached or had no data
	// (an agent, Prometheus, the API server).
	ExitSource = 3
	// ExitInterrupted: stopped by Ctrl-C or SIGTERM (128 + SIGINT), as
	// shells report it.
	ExitInterrupted = 130
)

// usageError marks bad input: the command exits with ExitUsage.
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

// exitCode maps an error to the exit status by its type or sentinel, never
// its text; this is the one place that does. An exitError carries its own;
// bad input (a usage error, an invalid spec, a bad demand input, a name a
// source does not know, a pod-level limit sent to a cluster without
// pod-level resources) is ExitUsage; a data source failing
// (source.Failed, and fleet's own sentinels for Prometheus and the agents)
// is ExitSource; anything else is ExitOver.
func exitCode(err error) int {
	var ee exitError
	var ue usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue) || errors.Is(err, experiment.ErrInvalidSpec) || errors.Is(err, demand.ErrInput) || errors.Is(err, source.ErrNotFound) || errors.Is(err, k8s.ErrPodLevelDropped):
		return ExitUsage
	case source.Failed(err) || errors.Is(err, fleet.ErrUnreachable) || errors.Is(err, fleet.ErrNoData):
		return ExitSource
	}
	return ExitOver
}
