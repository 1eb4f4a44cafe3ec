package vmtest

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable writes one row per kernel x layout x package: the accelerator
// the cell ran under, its outcome, its
// tests' counts and its wall time, then a line per cell that did not finish.
func WriteTable(w io.Writer, cells []Cell) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "kernel\tlayout\taccel\tpackage\tresult\tpass\tskip\tfail\ttime")
	for _, c := range cells {
		kernel := c.Kernel.Series
		if c.Release != "" {
			kernel = c.Release
		}
		for _, s := range c.Suites {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%.0f s\n", kernel, c.Layout.Name, c.Accel, s.Pkg, result(s), s.Pass, s.Skip, s.Fail, s.Took.Seconds())
		}
		if c.Err != nil {
			fmt.Fprintf(tw, "%s\t%s\t%s\t(cell)\tFAIL: %v\t\t\t\t%.0f s\n", kernel, c.Layout.Name, c.Accel, c.Err, c.Took.Seconds())
		}
	}
	return tw.Flush()
}

func result(s SuiteResult) string {
	switch {
	case s.Passed:
		return "pass"
	case !s.Ran:
		return "not run"
	default:
		return "FAIL"
	}
}

// WriteFailures writes the output of every package that failed (with all,
// of every package), and the console of every cell that did not finish,
// under a heading naming the cell.
func WriteFailures(w io.Writer, cells []Cell, all bool) {
	for _, c := range cells {
		for _, s := range c.Suites {
			if s.Passed && !all {
				continue
			}
			fmt.Fprintf(w, "\n=== %s %s %s: %s; its output:\n", c.Kernel.Series, c.Layout.Name, s.Pkg, result(s))
			for _, l := range s.Output {
				fmt.Fprintln(w, l)
			}
		}
		if c.Err != nil {
			fmt.Fprintf(w, "\n=== %s %s: %v; the guest's console (last 40 lines outside the tests):\n", c.Kernel.Series, c.Layout.Name, c.Err)
			con := c.Console
			if len(con) > 40 {
				con = con[len(con)-40:]
			}
			for _, l := range con {
				fmt.Fprintln(w, l)
			}
		}
	}
}
