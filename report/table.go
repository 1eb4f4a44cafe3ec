package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

const (
	ansiDim    = "\x1b[2m"
	ansiRed    = "\x1b[31;1m"
	ansiYellow = "\x1b[33m"
	ansiReset  = "\x1b[0m"
)

// WriteTable prints the summary of the sources as aligned tables, one per
// load, with units in the headers. With color set (stdout is a terminal), the
// reference is dimmed, a p99 at least twice the reference's is red and
// throttling yellow.
func WriteTable(w io.Writer, sources []*Source, color bool) {
	es := buildEntries(sources)
	paint := func(code, s string) string {
		if !color || code == "" {
			return s
		}
		return code + s + ansiReset
	}
	for i, load := range loadNames(es) {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "load %s\n", load)
		// Colour goes on whole lines after alignment, so the escape codes do
		// not count towards the column widths.
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "config\truns\trequests\terrors\treq/s\tp50 ms\tp90 ms\tp99 ms\tp99.9 ms\tmax ms\tp99/ref\tthrottled\tthrottled s\tstall ms\tmean cores\tpeak 100ms\t")
		rs := rows(es, load)
		for _, r := range rs {
			ratio := "-"
			if r.P99VsRef > 0 {
				ratio = fmt.Sprintf("%.2fx", r.P99VsRef)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f%%\t%.2f\t%s\t%.2f\t%.2f\t\n", r.Label, r.Runs, r.Count, r.Errors, r.RPS,
				fmtMs(r.P50), fmtMs(r.P90), fmtMs(r.P99), fmtMs(r.P999), fmtMs(r.Max), ratio, r.ThrottledPct, r.ThrottledSec, fmtMs(r.StallMs), r.MeanCores, r.Peak100ms)
		}
		tw.Flush()
		lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
		for j, l := range lines {
			code := ""
			if j > 0 {
				r := rs[j-1]
				switch {
				case r.Ref:
					code = ansiDim
				case r.P99VsRef >= 2:
					code = ansiRed
				case r.ThrottledPct > 0:
					code = ansiYellow
				}
			}
			fmt.Fprintln(w, paint(code, l))
		}
	}
}
