// Package record is the recorded run and the results directory every
// backend writes and the report reads: a run's summary (Run), where the runs
// were made (Env), reading and writing them, the
// one aggregation of runs into per-config figures (Summarize, with the
// intervals of package stats) and their rows (ExperimentSummary.Rows, which
// report.WriteRows prints).
//
// A results directory holds spec.yaml (the resolved spec), env.json,
// preset.json (package presets writes and reads it), verdict.json (a
// preset's check, package verdict), sim.json (the simulator's), summary.json,
// report.html and one directory per run, runs/CONFIG/LOAD/rN, with that run's
// summary.json, requests.csv, usage.csv, throttled.csv and latency.hdr. Their
// names are constants here (SpecFile, RunDir, RequestsFile, ...), spelled
// nowhere else.
//
// Example:
//
//	e, env, runs, err := record.ReadResults("results/limits/20261121-101500")
//	if err != nil {
//		return err
//	}
//	s := record.Summarize(e, runs)
//	fmt.Println(env.Backend)
//	report.WriteRows(os.Stdout, s.Rows(), false)
package record

// The package is not called results: /results/ is where run and sim write
// their results directories by default (and .gitignore keeps them out).
