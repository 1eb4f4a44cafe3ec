// Package advise finds the smallest CPU limit (and burst) that keeps one
// group's throttling under a target: its CPU use, sampled every 10 ms, is
// replayed through the kernel's quota model (package cfs) for a grid of
// limits at every phase of the period, beside what coarse recommenders
// (krr, the VPA) would set. It is the model only: where the demand comes
// from (a live group, a recorded run, a CSV) is package demand, the
// HTML charts and report section are package report's.
//
//	d, err := demand.ReadCSV(f) // time_ns,usage_ns
//	if err != nil { ... }
//	a, err := advise.Advise(d, advise.Request{Target: advise.Target{MaxThrottled: 0.05}}, advise.Sampled{Source: "usage.csv"})
//	if err != nil { ... }
//	advise.WriteText(os.Stdout, a) // or report.WriteAdviceHTML, or report.AdviceSection in a report
package advise
