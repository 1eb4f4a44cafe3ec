package record

import (
	"path/filepath"

	"github.com/throttlelab/throttlelab/experiment"
)

// The files of a results directory. Every backend, the presets, the report
// and the command line name them through these: a name is spelled here
// alone.
const (
	// SpecFile is the resolved spec, every default filled in.
	SpecFile = "spec.yaml"
	// EnvFile is where the runs were made (Env).
	EnvFile = "env.json"
	// PresetFile names the preset an experiment is (package presets).
	PresetFile = "preset.json"
	// VerdictFile is a preset's check (verdict.Verdict).
	VerdictFile = "verdict.json"
	// SimFile is the simulated machine and its costs (the simulator's Info).
	SimFile = "sim.json"
	// ReportFile is the HTML report.
	ReportFile = "report.html"
	// RunsDir holds one directory per run, runs/CONFIG/LOAD/rN (RunDir).
	RunsDir = "runs"
)

// The files of a run directory (runs/CONFIG/LOAD/rN), and of the output
// directory of throttlelab load. Every backend writes them through a
// RunWriter; the report and the checks read them. SummaryFile is also the
// experiment's summary in the results directory.
const (
	RequestsFile  = "requests.csv"
	ProbeFile     = "probe.csv"
	UsageFile     = "usage.csv"
	ThrottledFile = "throttled.csv"
	HistFile      = "latency.hdr"
	SummaryFile   = "summary.json"
	// PodsFile is the Kubernetes backend's record of a run's pods.
	PodsFile = "pods.json"
)

// BurstFile is a burst neighbour's file: one JSON line per finished cycle.
func BurstFile(name string) string { return "burst-" + name + ".jsonl" }

// RunDir is the directory of a run in the results directory dir.
func RunDir(dir string, r experiment.Run) string { return RunIDDir(dir, r.ID()) }

// RunIDDir is the directory of the run whose ID is id (CONFIG/LOAD/rN, as
// Run.ID) in the results directory dir.
func RunIDDir(dir, id string) string { return filepath.Join(dir, RunsDir, id) }
