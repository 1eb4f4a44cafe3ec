package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/stats"
)

const (
	ansiDim    = "\x1b[2m"
	ansiRed    = "\x1b[31;1m"
	ansiYellow = "\x1b[33m"
	ansiReset  = "\x1b[0m"
)

// WriteRows prints rows as aligned tables, one per load (in the order the
// loads first appear), with units in the headers. With color set (the output
// is a terminal), the reference is dimmed, a p99 at least twice the
// reference's is red and throttling yellow. It is the one table: run, sim and
// report all print it (WriteTable, and the runner when there is no report).
func WriteRows(w io.Writer, rows []record.Row, color bool) {
	paint := func(code, s string) string {
		if !color || code == "" {
			return s
		}
		return code + s + ansiReset
	}
	var loads []string
	for _, r := range rows {
		if !slices.Contains(loads, r.Load) {
			loads = append(loads, r.Load)
		}
	}
	for i, load := range loads {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "load %s\n", load)
		var rs []record.Row
		for _, r := range rows {
			if r.Load == load {
				rs = append(rs, r)
			}
		}
		// Colour goes on whole lines after alignment, so the escape codes do
		// not count towards the column widths.
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "config\truns\trequests\terrors\treq/s\tp50 ms\tp90 ms\tp99 ms\tp99.9 ms\tmax ms\tp99/ref\tthrottled\tthrottled s\tstall ms\tmean cores\tperiod peak\trolling 100ms peak\t")
		// Under each row with intervals, a line of the 95% intervals under
		// the figures they belong to.
		var lineRow []int
		lineRow = append(lineRow, -1)
		for i, r := range rs {
			ratio := "-"
			if r.P99VsReference > 0 {
				ratio = fmt.Sprintf("%.2fx", r.P99VsReference)
			}
			periodPeak := "-"
			if r.PeakPeriodCores > 0 {
				periodPeak = fmt.Sprintf("%.2f", r.PeakPeriodCores)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f%%\t%.2f\t%s\t%.2f\t%s\t%.2f\t\n", r.Label, r.Repeats, r.Requests, r.Errors, r.ThroughputRPS,
				FormatMs(r.P50Ms), FormatMs(r.P90Ms), FormatMs(r.P99Ms), FormatMs(r.P999Ms), FormatMs(r.MaxMs), ratio, r.ThrottledPct, r.ThrottledSec(), FormatMs(r.StallMs), r.MeanCores, periodPeak, r.Peak100msCores)
			lineRow = append(lineRow, i)
			if r.P99MsCI95 != nil {
				ratio := ""
				if iv := r.P99VsReferenceCI95; iv != nil && !r.IsReference {
					ratio = fmt.Sprintf("%.2f-%.2fx", iv[0], iv[1])
				}
				fmt.Fprintf(tw, "95%% interval\t\t\t\t\t%s\t%s\t%s\t%s\t\t%s\t\t\t\t\t\t\t\n",
					FormatInterval(r.P50MsCI95), FormatInterval(r.P90MsCI95), FormatInterval(r.P99MsCI95), FormatInterval(r.P999MsCI95), ratio)
				lineRow = append(lineRow, -2)
			}
		}
		tw.Flush()
		lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
		for j, l := range lines {
			code := ""
			if j > 0 && lineRow[j] == -2 {
				code, l = ansiDim, strings.TrimRight(l, " ")
			} else if j > 0 {
				r := rs[lineRow[j]]
				switch {
				case r.IsReference:
					code = ansiDim
				case r.P99VsReference >= 2:
					code = ansiRed
				case r.ThrottledPct > 0:
					code = ansiYellow
				}
			}
			fmt.Fprintln(w, paint(code, l))
		}
	}
}

// FormatMs prints a figure in ms with as many decimals as it needs to show
// three significant digits or so ("0", "4.25", "12.5", "1234").
func FormatMs(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 1000:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

// FormatInterval prints an interval as "low-high" in ms ("" for none).
func FormatInterval(iv *stats.Interval) string {
	if iv == nil {
		return ""
	}
	return FormatMs(iv[0]) + "-" + FormatMs(iv[1])
}
