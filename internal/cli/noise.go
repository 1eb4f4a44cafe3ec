package cli

import (
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/units"
	"github.com/throttlelab/throttlelab/workload"
)

type noiseFlags struct {
	threads  int
	duration time.Duration
}

func newNoiseCmd() *cobra.Command {
	var f noiseFlags
	cmd := &cobra.Command{
		Use:     "noise",
		Short:   "Spin N threads as a CPU hog, for neighbour experiments (until stopped)",
		Example: `  throttlelab noise --threads 2 --duration 30s`,
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.threads < 0 || f.threads > units.MaxCPUs {
				return usagef("--threads %d: want 0 (host CPUs) to %d", f.threads, units.MaxCPUs)
			}
			if f.duration < 0 {
				return usagef("--duration %s: must not be negative", f.duration)
			}
			n := gomaxprocsOrHost(f.threads)
			// Every spinning thread needs a P of its own.
			runtime.GOMAXPROCS(n)
			ctx := cmd.Context()
			if f.duration > 0 {
				var cancel func()
				ctx, cancel = contextWithTimeout(ctx, f.duration)
				defer cancel()
			}
			return workload.Noise(ctx, n)
		},
	}
	cmd.Flags().IntVar(&f.threads, "threads", 0, "spinning threads (0: all host CPUs)")
	durationVar(cmd.Flags(), &f.duration, "duration", 0, "stop after this long (0: until stopped)")
	return cmd
}
