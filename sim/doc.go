// Package sim is the discrete-event simulator: a model of a multi-core
// machine running an experiment spec, with no root, no cgroups and no real
// time.
//
// The model: per-core run queues where groups share a core by weight (weights
// are local to each core, as in Linux) and a group's threads share its
// weight; wake-up placement on an idle core of the group's cpuset, idle and
// busy-core load balancing; and CFS bandwidth control as the kernel does it: a
// pool of quota per group refilled each period at the group's own phase,
// handed to cores in 5 ms slices, throttling when the pool is dry, unused
// runtime returned, burst carried over, cpu.stat counted; a config's pod
// block nests its instances' groups in a pod group whose quota applies too
// (pod.go). Servers are Go
// processes (a goroutine per request on GOMAXPROCS threads, preempted after
// 10 ms when others wait) or single-threaded; loads, balancers and tile costs
// are the load generator's and the catalogue's; the load generator itself is
// a process beside the experiment. Sharing within a core is fluid (processor
// sharing), not time-sliced.
//
// It is single-threaded with a seeded generator and a fixed order for ties,
// so the same spec and seed give the same bytes:
//
//	e, _ := experiment.LoadFile("examples/limits.yaml")
//	// a results directory, as run writes it:
//	out, err := runner.Run(ctx, e, sim.NewBackend(sim.Options{Cores: 16}), runner.Options{Dir: "out"})
//	// or one run's figures in memory, nothing written:
//	rs, err := sim.Simulate(ctx, e, e.Runs()[0], sim.Options{Cores: 16})
package sim
