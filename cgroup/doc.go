// Package cgroup reads cgroup CPU settings on cgroup v1, v2 and hybrid hosts.
//
// Every reader takes a root path that is prepended to the kernel paths it opens,
// so tests point it at a fake tree; LimitsForCurrentProcess reads the real one:
//
//	lim, err := cgroup.LimitsForCurrentProcess()
//	if err != nil {
//		return err
//	}
//	fmt.Printf("%s host, quota %d/%d us, limit %.2f CPUs\n", lim.Mode, lim.QuotaUsec, lim.PeriodUsec, lim.LimitCores)
package cgroup
