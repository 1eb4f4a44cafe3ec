package cli

import "github.com/spf13/cobra"

// helpTopics are the concepts several commands rely on, read with
// "throttlelab help TOPIC": commands without an action, which cobra lists as
// additional help topics.
func helpTopics() []*cobra.Command {
	return []*cobra.Command{
		{
			Use:   "quota",
			Short: "Explain how a CPU limit becomes a quota per period, and why groups are throttled below it",
			Long: `A CPU limit is enforced by the CFS bandwidth controller as a quota of CPU
time per period for the whole group of threads: limit 250m with the default
period of 100ms is 25ms of CPU time every 100ms (cpu.max "25000 100000" on
cgroup v2, cpu.cfs_quota_us and cpu.cfs_period_us on v1). Once the group's
threads have used the quota, all of them stop until the next period starts:
the period counts as throttled (cpu.stat nr_throttled of nr_periods).

Work rarely arrives evenly. Requests that come together, or several threads
busy at once, spend a period's quota in a fraction of it, so a group is
throttled long before its average use reaches the limit, and a request that
needs more CPU than the quota waits whole periods. A burst allowance
(cpu.max.burst, cpu.cfs_burst_us, Linux 5.14+) lets quota unused in earlier
periods be spent later.

A request is different: it becomes cpu.shares (cgroup v1) or cpu.weight
(v2), a relative weight the scheduler enforces per core, only when CPUs are
contended. It never throttles.

throttlelab reports, per config: the throttled share of periods, the
throttled time, the mean use and the highest use within one period, so the
gap between "mostly idle" and "throttled" shows. See docs/ (methodology) for
the kernel's semantics and the measurements.`,
			Example: `  throttlelab sim examples/limits.yaml     # a 250m limit against none, simulated
  sudo throttlelab top                     # each cgroup's quota, peak and throttling now
  throttlelab validate examples/limits.yaml  # the quota and shares a spec's configs get`,
		},
		{
			Use:   "spec",
			Short: "Describe the experiment spec that run, sim, map and validate read",
			Long: `An experiment is a YAML file (apiVersion: throttlelab/v1alpha1, kind:
Experiment), read strictly: an unknown field or a bad value is an error that
names the file, line and field. Every field left out gets its default.

  workload    request: tile|burn|api, with tiles or burn (cpu=5ms)
  load(s)     mode (image, ramp, rate, onoff, probe, sequential) and its
              settings: rate, arrivals, workers, ramp, step, sources, on,
              off, duration, requests, timeout; each load runs every config
  balancer    random, roundrobin, ingress:K, least or p2c
  configs     name, instances, cpu {request, limit, period, burst, cpuset}
              in Kubernetes units, server {gomaxprocs, single, cpuClock},
              neighbours
  neighbours  noise, burst, probe or server, each with its own cpu
  repeats, order (interleaved|grouped), warmup, reference, seed

A preset (throttlelab presets) is a spec: "throttlelab presets show NAME"
prints it to copy and change; "throttlelab validate SPEC" shows every
default and the cgroup settings each config gets. examples/ holds more.`,
			Example: `  throttlelab presets show f09-burn-flow > my.yaml
  throttlelab validate my.yaml
  throttlelab sim my.yaml`,
		},
	}
}
