// Package startup sizes a container's start-up boost from the demand of its
// start-up: the CPU time the start-up needs, how long it takes under a CPU
// limit, and the CPU to give it while it starts (and for how long) so that
// it ends within a stated share of its unlimited length. It renders the
// boost as the VPA's startupBoost (AEP-7862) and as a kube-startup-cpu-boost
// StartupCPUBoost object. It does no I/O.
//
// The length under a limit is a fluid completion model: work arrives as the
// start-up asked for it, a limit of L cores serves at most L cores at any
// moment, and what it cannot serve waits in order. The start-up ends when
// its last work is served:
//
//	T(L) = max over s of  s + (W - A(s)) / L
//
// with A(s) the work asked for by time s and W all of it. The kernel serves
// a quota per period, not a rate, so a real start-up under L ends within
// about one period of T(L) (the quota model, package cfs, replays the
// period; at start-up lengths of seconds the difference is a few percent).
//
// Sizing a boost for a start-up sampled every 10 ms, under a 500m limit:
//
//	p := startup.Profile{Step: 10 * time.Millisecond, Cores: cores}
//	b, err := startup.Plan(p, 0.5, startup.Options{})
//	if err != nil {
//		return err
//	}
//	fmt.Printf("%.2f cores for %d s\n", b.BoostCores, b.DurationSeconds)
package startup
