package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/experiment"
)

type validateFlags struct {
	quick bool
	cores int
	yaml  bool
}

func newValidateCmd() *cobra.Command {
	var f validateFlags
	cmd := &cobra.Command{
		Use:   "validate SPEC.yaml|PRESET",
		Short: "Check an experiment and show what would run, without running it",
		Long: `Read an experiment spec (or a preset) as run and sim would, and show it
resolved: every default filled in, each config's cgroup settings as the kubelet
would write them (quota, period, burst, cpu.shares, the v2 cpu.weight), its QoS
class and the GOMAXPROCS its instances would get on this machine (or --cores),
the neighbours, and the runs in the order they would be done. Values that
Kubernetes would change (the 1 ms quota floor, millicore rounding, the bounds
of cpu.shares) are shown as warnings. Nothing is started; no root is needed.

Exit status: 0 when the spec is valid (warnings or not), 2 when it is not, with
one line naming the file, line and field at fault.`,
		Example: `  throttlelab validate examples/limits.yaml
  throttlelab validate f01-logjam --quick --cores 2
  throttlelab validate --yaml my.yaml > resolved.yaml`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cores, err := checkCores(f.cores)
			if err != nil {
				return err
			}
			e, _, err := specOf(args[0], f.quick, cores)
			if err != nil {
				return err
			}
			printWarnings(cmd, e)
			if err := e.CheckCPUs(cores); err != nil {
				return err
			}
			if f.yaml {
				b, err := experiment.Marshal(e)
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			return describe(cmd.OutOrStdout(), e, args[0], cores)
		},
	}
	cmd.Flags().BoolVar(&f.quick, "quick", false, "a preset's quick variant, scaled to --cores or this machine")
	cmd.Flags().IntVar(&f.cores, "cores", 0, "CPUs of the machine to check against (default: this machine's)")
	cmd.Flags().BoolVar(&f.yaml, "yaml", false, "print the resolved spec as YAML (what spec.yaml in the results will hold)")
	return cmd
}

// printWarnings writes the spec's warnings to stderr, one line each.
func printWarnings(cmd *cobra.Command, e *experiment.Experiment) {
	for _, w := range e.Warnings() {
		fmt.Fprintf(cmd.ErrOrStderr(), "throttlelab: warning: %s\n", w)
	}
}

// describe is experiment.Describe.
func describe(w io.Writer, e *experiment.Experiment, source string, cores int) error {
	return experiment.Describe(w, e, source, cores)
}
