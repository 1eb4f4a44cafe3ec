package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/throttlelab/throttlelab/record"
)

// Write prints the table of results directories (read with Load) and writes
// their HTML report to out: what run, sim and report end with. sections are
// drawn after the loads (the CLI passes advise's).
func Write(w io.Writer, sources []*Source, out string, maxInstances int, color bool, sections ...Section) error {
	if maxInstances <= 0 {
		maxInstances = 4
	}
	WriteTable(w, sources, color)
	err := record.WriteFileAtomic(out, func(f *os.File) error {
		return WriteHTML(f, sources, Options{MaxInstances: maxInstances, Sections: sections})
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "report: %s\n", out)
	return nil
}

// Set is results directories read once for one report: the runner takes the
// last one's summary from it (with intervals from the requests read here)
// instead of reading the requests again, then writes it.
type Set struct {
	Sources []*Source
	// MaxInstances caps the CPU-use charts per config (4 if 0).
	MaxInstances int
	// Color paints the table.
	Color bool
	// Sections are drawn after the loads (advise's).
	Sections []Section
}

// ReadSet reads the results directories dirs (Load), labelled as
// AutoLabel does; the last one's runs in held take their records and
// samples from memory (LoadHeld).
func ReadSet(dirs []string, held ...*record.Run) (*Set, error) {
	s := &Set{}
	for i, dir := range dirs {
		var h []*record.Run
		if i == len(dirs)-1 {
			h = held
		}
		src, err := LoadHeld(dir, h)
		if err != nil {
			return nil, err
		}
		s.Sources = append(s.Sources, src)
	}
	AutoLabel(s.Sources)
	return s, nil
}

// Summary is the last directory's runs summed up, with their intervals.
func (s *Set) Summary() *record.ExperimentSummary { return s.Sources[len(s.Sources)-1].Summary }

// Write prints the table to w and writes the HTML report to path
// (DIR/report.html when path is "": the last directory's).
func (s *Set) Write(w io.Writer, path string) error {
	if path == "" {
		path = filepath.Join(s.Sources[len(s.Sources)-1].Dir, record.ReportFile)
	}
	return Write(w, s.Sources, path, s.MaxInstances, s.Color, s.Sections...)
}
