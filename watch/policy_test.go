package watch

import "time"

// TestPolicy is a Policy of functions for tests (exported to package
// watch_test): a nil PicksFn picks every group, a nil OnGridFn puts every
// instant on the grid, and a nil ObserveFn keeps every group cold.
type TestPolicy struct {
	PicksFn   func(Identity) bool
	OnGridFn  func(time.Duration) bool
	ObserveFn func(Sample) bool
}

// Picks implements Policy.
func (p TestPolicy) Picks(id Identity) bool { return p.PicksFn == nil || p.PicksFn(id) }

// OnGrid implements Policy.
func (p TestPolicy) OnGrid(at time.Duration) bool { return p.OnGridFn == nil || p.OnGridFn(at) }

// Observe implements Policy.
func (p TestPolicy) Observe(s Sample) bool { return p.ObserveFn != nil && p.ObserveFn(s) }
