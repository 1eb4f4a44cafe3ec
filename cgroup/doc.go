// Package cgroup reads and writes cgroup CPU settings on cgroup v1, v2 and
// hybrid hosts, with Kubernetes semantics.
//
// Every reader takes a root path that is prepended to the kernel paths it opens,
// so tests point it at a fake tree; LimitsForCurrentProcess reads the real one:
//
//	lim, err := cgroup.LimitsForCurrentProcess()
//	if err != nil {
//		return err
//	}
//	fmt.Printf("%s host, quota %d/%d us, limit %.2f CPUs\n", lim.Mode, lim.QuotaUsec, lim.PeriodUsec, lim.LimitCores)
//
// A Manager makes the groups of one run under throttlelab/<run-id>, translating
// Kubernetes requests and limits as the kubelet does, and removes them after:
//
//	m, err := cgroup.NewManager("/", runID, false)
//	if err != nil {
//		return err
//	}
//	defer m.Cleanup(true) // kills what is left in its groups, removes them
//	s, qos, err := cgroup.KubeCPU{RequestMilli: 250, LimitMilli: 250}.Settings(cgroup.WeightLinear)
//	g, err := m.NewGroup("limited-0", s) // qos == cgroup.Guaranteed
//	err = g.Attach(pid)
//	stat, err := g.Stat() // throttled periods and time
package cgroup
