package advise

import "github.com/throttlelab/throttlelab/cfs"

// Demand is one group's CPU use as cumulative counters at sample times
// (cfs.Demand, the quota model's input): advise takes it from every source.
type Demand = cfs.Demand
