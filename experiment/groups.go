package experiment

// The load generator's group: each run puts the load generator (the
// runner's own process, with its sampler) in a group of its own beside the
// experiment's cgroup subtree, at a fixed weight, so what the instances
// compete against does not depend on where the runner was started, nor on
// how many threads it has. As a sibling of the whole subtree it weighs
// against all of the run's groups together; beside the instances it would
// weigh against each, and a BestEffort instance (shares 2) would starve. The
// simulator models it the same way.
const (
	// LoadGenShares is its cpu.shares on cgroup v1, LoadGenWeight its
	// cpu.weight on v2: the kernel's defaults, as much as the subtree.
	LoadGenShares = 1024
	LoadGenWeight = 100
)
