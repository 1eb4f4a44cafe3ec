// Package local is the backend that runs an experiment on this machine: real
// server processes in real cgroups (v1 or v2), with the configs' CPU
// settings, under the shared runner loop (package runner). A config with a
// pod block gets a pod group with the pod-level quota, its instances' groups
// nested inside it, as the kubelet nests containers in their pod.
//
// Example:
//
//	b := local.New(local.Options{Binary: exe, Log: os.Stderr})
//	out, err := runner.Run(ctx, e, b, runner.Options{Dir: dir})
package local
