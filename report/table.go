package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/throttlelab/throttlelab/record"
)

// WriteTable prints the summary of the sources as aligned tables, one per
// load, with units in the headers (WriteRows). With color set
// (stdout is a terminal), the reference is dimmed, a p99 at least twice the
// reference's is red and throttling yellow.
func WriteTable(w io.Writer, sources []*Source, color bool) {
	writeHeadlines(w, sources)
	es := buildEntries(sources)
	var all []record.Row
	for _, load := range loadNames(es) {
		all = append(all, rows(es, load)...)
	}
	WriteRows(w, all, color)
}

// writeHeadlines prints each source's headline (Headline) before the table,
// named by its label when there are several, and a blank line.
func writeHeadlines(w io.Writer, sources []*Source) {
	n := 0
	for _, s := range sources {
		h := Headline(s)
		if h == "" {
			continue
		}
		if len(sources) > 1 {
			h = s.Label + ": " + strings.ToLower(h[:1]) + h[1:]
		}
		fmt.Fprintln(w, h)
		n++
	}
	if n > 0 {
		fmt.Fprintln(w)
	}
}
