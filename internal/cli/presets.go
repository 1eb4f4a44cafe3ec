package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/presets"
)

func newPresetsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "presets",
		Short: "List the built-in experiments that reproduce published findings",
		Long: `List the built-in experiments, one (or two) per published finding, with
the study and the finding (docs/findings.md cites each study and shows what
this machine and the simulator reproduced). Run one with "throttlelab run NAME --quick" (scaled to
this machine, a few minutes) or simulate it at its original scale with
"throttlelab sim NAME"; "throttlelab presets show NAME" prints its spec.`,
		Example: `  throttlelab presets
  throttlelab presets show f01-logjam`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tFINDING\tSOURCE\tCORES\tFINDING IN ONE LINE")
			for _, p := range presets.All() {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", p.Name, p.Finding, p.Source, p.Cores, p.Claim)
			}
			return tw.Flush()
		},
	}
	var quick bool
	var cores int
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Print a preset's experiment spec (to copy and change)",
		Example: `  throttlelab presets show f09-burn-flow > my.yaml
  throttlelab presets show f01-logjam --quick --cores 2`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, ok := presets.Lookup(args[0])
			if !ok {
				return usagef("no preset %q: the presets are %s", args[0], presets.Names())
			}
			if !quick {
				if cmd.Flags().Changed("cores") {
					return usagef("--cores scales the quick variant: give --quick too")
				}
				b, err := p.YAML()
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			cores, err := checkCores(cores)
			if err != nil {
				return err
			}
			e, how, err := p.Quick(cores)
			if err != nil {
				return err
			}
			b, err := experiment.Marshal(e)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "# %s --quick for %d cores: %s\n", p.Name, cores, how)
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
	show.Flags().BoolVar(&quick, "quick", false, "show the quick variant (resolved, with every default)")
	show.Flags().IntVar(&cores, "cores", 0, "scale the quick variant for this many cores (default: this machine's)")
	cmd.AddCommand(show)
	return cmd
}

// specOf turns a command's argument into an experiment: a spec file, or a
// preset's name (its quick variant for cores CPUs when quick is set).
func specOf(arg string, quick bool, cores int) (*experiment.Experiment, *presets.Info, error) {
	if _, err := os.Stat(arg); err == nil {
		if quick {
			return nil, nil, usagef("--quick is for presets: %s is a spec file", arg)
		}
		e, err := experiment.LoadFile(arg)
		if err != nil {
			return nil, nil, usageError{err}
		}
		return e, nil, nil
	}
	p, ok := presets.Lookup(arg)
	if !ok {
		if filepath.Ext(arg) == ".yaml" || filepath.Ext(arg) == ".yml" {
			return nil, nil, usagef("%s: no such spec file", arg)
		}
		return nil, nil, usagef("%s is neither a spec file nor a preset: the presets are %s", arg, presets.Names())
	}
	if !quick {
		e, err := p.Spec()
		return e, &presets.Info{Preset: p.Name}, err
	}
	e, how, err := p.Quick(cores)
	return e, &presets.Info{Preset: p.Name, Scaled: how}, err
}
