// Package agent is throttlelab's per-node agent: every container's CPU use
// sampled every 10 ms (the watcher), kept as a bounded summary of its
// demand over a rolling window, and served as Prometheus metrics (watch's,
// and per container the advised limit and burst, the predicted throttling
// and delay at the current, advised, krr and VPA limits), as advise's JSON
// (/advice) and as the evaluation of any candidate (/evaluate).
//
// The summary (ContainerSummary) holds the raw samples of one chunk (a minute); each
// chunk is replayed through advise's quota model at a fixed ladder of limits
// and folded into blocks (an hour), which the window keeps (a day). The
// agent's advice and advise's on the same samples agree (see
// TestSummaryAgreesWithAdvise); docs/fleet.md says how closely and what it
// costs.
//
//	a, err := agent.New(agent.Config{Root: "/", Node: "node-1"})
//	if err != nil { ... }
//	go http.ListenAndServe(":9101", a.Handler())
//	err = a.Run(ctx)
package agent
