// Package runner is the one loop every backend runs under: it expands the
// spec into runs (matrix and order), skips the runs a resumed directory has
// already, logs progress with an ETA, writes each run into a temporary
// directory and renames it into place when complete, and at the end sums the
// runs up (summary.json), judges a preset's check and writes the report.
//
// A backend (local processes in cgroups, the simulator, Kubernetes) only
// turns one run into a recorded run: see Backend.
//
// Example:
//
//	b := local.New(local.Options{Binary: "/usr/local/bin/throttlelab"})
//	out, err := runner.Run(ctx, e, b, runner.Options{Dir: "results/limits/1", Log: os.Stderr, Out: os.Stdout, Report: true})
//	if err != nil {
//		return err
//	}
//	fmt.Println(len(out.Runs), "runs")
package runner
