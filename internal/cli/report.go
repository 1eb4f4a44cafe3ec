package cli

import (
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/internal/progress"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/report"
)

type reportFlags struct {
	out          string
	maxInstances int
}

func newReportCmd() *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:   "report DIR...",
		Short: "Write the HTML report of results directories and print their summary",
		Long: `Turn one or more results directories (from run or sim) into one
self-contained HTML file (report.html in the first directory, or --html) and print
the summary table. Several directories are compared in one report: configs of
the same name share a colour, each directory its own dash, so a simulated and a
measured run of one spec are drawn over each other.`,
		Example: `  throttlelab report results/limits/20261121-101500
  throttlelab report --html compare.html results/limits/A results/limits-sim/B`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("give at least one results directory (written by throttlelab run or sim)")
			}
			if f.maxInstances < 1 {
				return usagef("--max-instances %d: give 1 or more", f.maxInstances)
			}
			var sources []*report.Source
			for _, dir := range args {
				s, err := report.Load(dir)
				if err != nil {
					return usageError{err}
				}
				sources = append(sources, s)
			}
			report.AutoLabel(sources)
			out := f.out
			if out == "" {
				out = filepath.Join(args[0], record.ReportFile)
			}
			w := cmd.OutOrStdout()
			return report.Write(w, sources, out, f.maxInstances, progress.IsTerminal(w), report.AdviceSection)
		},
	}
	cmd.Flags().StringVar(&f.out, "html", "", "HTML file to write (default: report.html inside the first DIR, which it replaces)")
	deprecatedAlias(cmd, "out", "html")
	cmd.Flags().IntVar(&f.maxInstances, "max-instances", 4, "CPU-use charts per config at most")
	return cmd
}
