// Package runtimes names the runtime inside a group of processes and the
// setting that decides its parallelism: Go's GOMAXPROCS, a JVM's
// -XX:ActiveProcessorCount (and its GC thread counts), Node.js's
// UV_THREADPOOL_SIZE, nginx's worker_processes, Envoy's --concurrency,
// gunicorn's and uvicorn's workers, .NET's DOTNET_PROCESSOR_COUNT. It reads
// /proc (under a root path, so tests point it at a fake tree) and the
// binary; it starts nothing and asks no process anything.
//
// A runtime it cannot name is "unknown", never guessed. A process that
// exits while read, a /proc file that cannot be read, a binary without
// build information: Detect still returns, with one Warning naming why, so
// the caller advises the group without its runtime.
//
// Reading a group costs a few file reads per process and, for a Go binary,
// its build information: call it when a group is discovered and when it
// execs, not every sample (BenchmarkDetect measures it).
//
// ForAdvice gives the same as advise.AddRuntime takes it, for advise on a
// live group (its processes read once, when sampling begins).
//
// Example:
//
//	rt, warns := runtimes.Detect("/", pids)
//	for _, w := range warns {
//		logger.Warn("runtime", "pid", w.PID, "why", w.Why)
//	}
//	if rt.Kind != runtimes.Unknown {
//		n, rule := rt.Procs(limitCores, cpus) // what it will use under this limit
//		fmt.Printf("%s %s: %s=%d (%s)\n", rt.Kind, rt.Version, rt.Setting.Name, n, rule)
//	}
package runtimes
