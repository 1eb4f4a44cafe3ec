// Package units parses the values throttlelab's settings are written in: CPU
// quantities in Kubernetes units, durations, request rates and GOMAXPROCS
// policies. There is one parser for each, shared by the experiment spec, the
// command-line flags, the server and the simulator, so a value means the same
// everywhere and is refused the same way everywhere, before anything runs.
//
// Every parser bounds what it accepts (MaxCPUs, MaxRate, ...): values beyond
// the bounds are mistakes, and refusing them keeps the arithmetic that follows
// (quota = limit x period, intervals = 1 / rate) free of overflow.
//
//	m, roundedUp, err := units.ParseMilliCPU("250m") // 250, false, nil
//	q, err := units.ParseCPUQuantity("0.5")       // q.Milli 500, written back as "0.5"
//	d, err := units.ParseDuration("100ms")
//	p, err := units.ParseGOMAXPROCS("automaxprocs")
//	n, source := p.Resolve(16, 8, 1.5) // 1, "automaxprocs (1.5 CPUs)"
package units
