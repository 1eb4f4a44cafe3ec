package watch

import "github.com/throttlelab/throttlelab/cgroup"

// Peak bases: how a group's peak was found (Stats.PeakBasis).
const (
	// BasisPeriod: between the group's own period boundaries.
	BasisPeriod = cgroup.BasisPeriod
	// BasisWindow: over sliding windows (Options.Window for a group without
	// a quota; its period for a limited group whose period timer did not
	// run, whose cpu.stat was carried at a sample of the interval
	// (ByNeed.Stat), or that was read on the coarse grid
	// (ByNeed.Coarse) while not hot: the highest mean between two grid
	// instants).
	BasisWindow = cgroup.BasisWindow
)
