// Package local is the backend that runs an experiment on this machine: real
// server processes in real cgroups (v1 or v2), with the configs' CPU
// settings, under the shared runner loop (package runner).
//
// Example:
//
//	b := local.New(local.Options{Binary: exe, Log: os.Stderr})
//	out, err := runner.Run(ctx, e, b, runner.Options{Dir: dir})
package local
