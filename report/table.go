package report

import (
	"io"

	"github.com/throttlelab/throttlelab/record"
)

// WriteTable prints the summary of the sources as aligned tables, one per
// load, with units in the headers (record.WriteTable). With color set
// (stdout is a terminal), the reference is dimmed, a p99 at least twice the
// reference's is red and throttling yellow.
func WriteTable(w io.Writer, sources []*Source, color bool) {
	es := buildEntries(sources)
	var all []record.Row
	for _, load := range loadNames(es) {
		all = append(all, rows(es, load)...)
	}
	record.WriteTable(w, all, color)
}
