// Package watch watches every cgroup with CPU accounting on a host (cgroup v1
// with cpu and cpuacct apart or together, v2, hybrid) and reports, per group
// and interval, its limit, burst and request, its mean use, the highest use
// within one of its own CFS periods, throttling, bursts, CPU pressure and
// processes; it names groups as their owners know them (Kubernetes pods and
// containers, runtimes' scopes, systemd units, throttlelab's own groups).
//
// A Watcher keeps each group's counter files open and reads them with pread
// every 10 ms (cgroup.PreadFile, cgroup.ParseCPUCounters: one system call
// per file and no allocation); settings, pressure and processes are read once
// per interval. Every reader takes a root path, so the tests run on fake
// trees (testdata/*.txtar, laid out by watch/watchtest).
//
// Sampling by need (ByNeed) is the agent's: a Policy picks the groups read
// at every sample, puts the others on a coarse grid, and is given each
// reading as a Sample, saying from it which groups are hot.
//
//	w, err := watch.New(watch.Options{Root: "/"})
//	if err != nil {
//		return err
//	}
//	defer w.Close()
//	err = w.Run(ctx, time.Second, func(stats []watch.Stats) bool {
//		for _, s := range stats {
//			if s.ThrottledPeriodsRatio > 0.1 && s.PeakPeriodCores != nil {
//				fmt.Printf("%s: throttled in %.0f%% of periods, peak %.2f cores\n", s.Name, 100*s.ThrottledPeriodsRatio, *s.PeakPeriodCores)
//			}
//		}
//		return true // keep watching
//	})
//
// Collector serves the reports as Prometheus metrics named as cAdvisor names
// them; package top is the live view over a Watcher (its table and screen).
package watch
