// Package stats is throttlelab's statistics: the one rank rule for
// percentiles (Rank, Percentile, the rule of the HDR histograms the load
// generator records), Median, and bootstrap intervals over repeated runs
// (Sample, Resample, PercentileInterval). It imports only the standard
// library.
//
//	s := stats.NewSample(latenciesMs) // sorted in place
//	p99 := stats.Quantile(99).Of(s)
//	draws := stats.Resample([][]*stats.Sample{{s}}, stats.Quantile(99), stats.Resamples, stats.BootstrapSeed)
//	iv, ok := stats.PercentileInterval(draws[0], p99)
package stats
