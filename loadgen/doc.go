// Package loadgen is throttlelab's load generator: closed-loop, open-loop
// (constant or Poisson, without coordinated omission), Markov on/off and ramp
// loads against one or more workload server instances, behind a choice of
// balancers, with every request recorded.
//
// Open-loop latency runs from each request's due time, so a stalled server
// cannot hide its queue; the schedule is paced with a kernel timerfd, since the
// Go runtime rounds short sleeps up to a millisecond. Requests go through the
// package's own keep-alive HTTP/1.1 client (HTTPDoer), which costs about half
// the CPU per request of net/http's and allocates nothing per request.
//
// Example:
//
//	res, err := loadgen.Run(ctx, loadgen.Config{
//		Mode:     loadgen.ModeRate,
//		Targets:  []string{"http://127.0.0.1:8080", "http://127.0.0.1:8081"},
//		Balancer: loadgen.BalancerSpec{Kind: loadgen.BalanceRoundRobin},
//		Workload: loadgen.WorkloadSpec{Kind: loadgen.KindBurn, Burn: loadgen.Burn{CPU: 5 * time.Millisecond}},
//		Rate:     50,
//		Arrivals: "poisson",
//		Duration: 30 * time.Second,
//		Records:  csvFile, // requests.csv, one row per request (optional)
//	})
//	if err != nil {
//		return err
//	}
//	fmt.Printf("p99 %.1f ms over %d requests\n", res.Summary.Latency.P99, res.Summary.Requests)
package loadgen
