package cli

import (
	"encoding/json"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/units"
	"github.com/throttlelab/throttlelab/workload"
)

type burstFlags struct {
	workers    int
	busy       time.Duration
	sleep      time.Duration
	cycles     int
	gomaxprocs int
}

func newBurstCmd() *cobra.Command {
	var f burstFlags
	cmd := &cobra.Command{
		Use:     "burst",
		Short:   "Run the periodic burst worker: N goroutines busy, then asleep (one JSON line per cycle)",
		Example: `  throttlelab burst --workers 4 --busy 200ms --sleep 2s --cycles 5`,
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.workers < 1 {
				return usagef("--workers %d: must be at least 1", f.workers)
			}
			if f.busy <= 0 {
				return usagef("--busy %s: must be positive", f.busy)
			}
			if f.sleep < 0 {
				return usagef("--sleep %s: must not be negative", f.sleep)
			}
			if f.cycles < 0 {
				return usagef("--cycles %d: must be 0 (until stopped) or more", f.cycles)
			}
			if f.workers > units.MaxCPUs {
				return usagef("--workers %d: want 1 to %d", f.workers, units.MaxCPUs)
			}
			if err := setGOMAXPROCS(f.gomaxprocs, "host CPUs", func() int { return gomaxprocsOrHost(0) }); err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			var encErr error
			err := workload.RunBurst(cmd.Context(), workload.BurstConfig{Workers: f.workers, Busy: f.busy, Sleep: f.sleep, Cycles: f.cycles},
				func(c workload.BurstCycle) {
					if encErr == nil {
						encErr = enc.Encode(c)
					}
				})
			if err != nil {
				return err
			}
			return encErr
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.workers, "workers", 4, "goroutines, each on its own OS thread while busy")
	durationVar(fl, &f.busy, "busy", 200*time.Millisecond, "busy phase per cycle (wall time)")
	durationVar(fl, &f.sleep, "sleep", 2*time.Second, "sleep between busy phases")
	fl.IntVar(&f.cycles, "cycles", 0, "stop after this many cycles (0: until stopped)")
	fl.IntVar(&f.gomaxprocs, "gomaxprocs", 0, "GOMAXPROCS (0: all host CPUs)")
	return cmd
}

// setGOMAXPROCS checks --gomaxprocs n (0: zero(), the CPUs zeroMeans
// names) and sets it: GOMAXPROCS is an experiment variable, always set
// explicitly rather than left to the runtime's cgroup-aware default.
func setGOMAXPROCS(n int, zeroMeans string, zero func() int) error {
	if n < 0 || n > units.MaxCPUs {
		return usagef("--gomaxprocs %d: want 0 (%s) to %d", n, zeroMeans, units.MaxCPUs)
	}
	if n == 0 {
		n = zero()
	}
	runtime.GOMAXPROCS(n)
	return nil
}

// gomaxprocsOrHost returns n, or the host's online CPUs when n is 0. GOMAXPROCS is
// an experiment variable, so it is always set explicitly rather than left to the
// runtime's cgroup-aware default.
func gomaxprocsOrHost(n int) int {
	if n > 0 {
		return n
	}
	if h, err := cgroup.OnlineCPUs("/"); err == nil {
		return h
	}
	return runtime.NumCPU()
}
