// Package report turns results directories, written by the local backend or
// the simulator, into one self-contained HTML file and a terminal table.
//
// Charts are SVG drawn here, so the file needs no chart library and renders
// the same bytes for the same results:
//
//	src, err := report.Load("results/limits/20261121-105420")
//	if err != nil {
//		return err
//	}
//	report.WriteTable(os.Stdout, []*report.Source{src}, false)
//	err = report.WriteHTML(f, []*report.Source{src}, report.Options{})
package report
