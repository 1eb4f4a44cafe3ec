package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/workload"
)

type tilesStatsFlags struct {
	catalog string
	nsPerIt float64
	jsonOut bool
}

func newTilesStatsCmd() *cobra.Command {
	var f tilesStatsFlags
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Print the tile cost distribution (iterations and estimated CPU time here)",
		Example: `  throttlelab tiles stats
  throttlelab tiles stats --json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !(f.nsPerIt >= 0) || math.IsInf(f.nsPerIt, 0) {
				return usagef("--ns-per-iteration %g: must be positive, or 0 to measure", f.nsPerIt)
			}
			c, err := loadCatalog(f.catalog)
			if err != nil {
				return err
			}
			cal := workload.KernelCalibration{NsPerIteration: f.nsPerIt}
			if cal.NsPerIteration == 0 {
				if cal, err = workload.CalibrateKernel(4000, 5); err != nil {
					return err
				}
			}
			st := c.Stats()
			if f.jsonOut {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					workload.CostStats
					Calibration workload.KernelCalibration `json:"calibration"`
				}{st, cal})
			}
			printTileStats(cmd.OutOrStdout(), st, cal)
			return nil
		},
	}
	cmd.Flags().StringVar(&f.catalog, "catalog", "", "catalogue file (default: the one built in)")
	cmd.Flags().Float64Var(&f.nsPerIt, "ns-per-iteration", 0, "CPU ns per kernel iteration (0: measure now)")
	cmd.Flags().BoolVar(&f.jsonOut, "json", false, "print JSON")
	return cmd
}

func fmtCPU(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	case d < time.Hour:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return d.Round(time.Second).String()
}

func printTileStats(w io.Writer, st workload.CostStats, cal workload.KernelCalibration) {
	fmt.Fprintf(w, "%d tiles, %.4g iterations, %s of CPU for the whole image at %.3f ns/iteration (measured here)\n\n",
		st.Tiles, float64(st.TotalIterations), fmtCPU(cal.Duration(st.TotalIterations)), cal.NsPerIteration)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "percentile\titerations\test. CPU\t")
	for _, p := range []string{"p0", "p10", "p25", "p50", "p75", "p90", "p99", "p100"} {
		n := st.Percentiles[p]
		fmt.Fprintf(tw, "%s\t%d\t%s\t\n", p, n, fmtCPU(cal.Duration(n)))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "class\ttiles\tshare of CPU\titerations\t")
	for _, cl := range []workload.Class{workload.ClassSmall, workload.ClassMedium, workload.ClassLarge} {
		rng := map[workload.Class]string{
			workload.ClassSmall:  fmt.Sprintf("< %d", workload.SmallMaxIterations),
			workload.ClassMedium: fmt.Sprintf("%d..%d", workload.SmallMaxIterations, workload.LargeMinIterations),
			workload.ClassLarge:  fmt.Sprintf(">= %d", workload.LargeMinIterations),
		}[cl]
		fmt.Fprintf(tw, "%s\t%d\t%.1f%%\t%s\t\n", cl, st.Classes[cl], 100*float64(st.ClassIterations[cl])/float64(st.TotalIterations), rng)
	}
	tw.Flush()
	fmt.Fprintln(w, "\ncost histogram (bins double in width; # = tiles)")
	most := 1
	for _, b := range st.Histogram {
		most = max(most, b.Count)
	}
	tw = tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	for _, b := range st.Histogram {
		bar := strings.Repeat("#", (b.Count*50+most-1)/most)
		fmt.Fprintf(tw, "%s..%s\t%6d\t%s\n", fmtCPU(cal.Duration(b.Lo)), fmtCPU(cal.Duration(b.Hi)), b.Count, bar)
	}
	tw.Flush()
}
