// Package demand is where advise's demand comes from: a live group sampled
// every 10 ms (FindPid, FindPod, FindPath, then Sample), a CSV of cumulative
// usage (ReadCSV, WriteCSV), or a run recorded by throttlelab run
// (record.ReadDemand); Load picks one from an Input. It stands apart from
// the model (package advise) so that the model's callers (the node agent,
// check) do not carry watch's discovery or the results-directory reader.
//
//	g, err := demand.FindPid("/", pid)
//	if err != nil { ... }
//	d, stat, err := demand.Sample(ctx, g, 10*time.Minute, nil)
//	if err != nil { ... }
//	a, err := advise.Advise(d, advise.Request{}, advise.Sampled{Source: g.Name, CPUStat: stat, LimitMilli: g.LimitMilli()})
package demand
