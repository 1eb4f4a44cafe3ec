// Package fleet is throttlelab's cluster-wide advice: it reads what every
// node's agent measured and advised (through Prometheus, or from one agent's
// /advice), groups containers by the workload that owns them, and writes the
// result as a table, JSON, CSV or patches; and it checks proposed limits in
// Kubernetes manifests against measured demand (the check command, a CI gate).
//
//	cs, err := fleet.FromPrometheus(ctx, http.DefaultClient, "http://prometheus:9090", fleet.PromOptions{})
//	if err != nil { ... }
//	ws := fleet.Group(cs)
//	err = fleet.WriteTable(os.Stdout, ws)
//
//	ms, err := fleet.ReadManifests([]string{"deploy/"}, os.Stdin, "default")
//	if err != nil { ... } // a *ManifestError: bad input
//	agents, err := fleet.DiscoverAgents(ctx, http.DefaultClient, "http://prometheus:9090")
//	res, err := fleet.Check(ctx, ms, &fleet.Measured{Containers: cs, Client: http.DefaultClient, Agents: agents}, fleet.Budget{MaxThrottled: 0.05})
//	fleet.WriteCheck(os.Stdout, res, false) // exit 1 if fleet.Violated(res)
//
// Nothing here imports Kubernetes' modules: resizing pods in place lives in
// package k8s/resize (resize.Resize), which takes plain rows (resize.Row)
// made from the Resize rows PlanResizes plans, with their ResizePatch; the
// resizer imports neither this package nor, through it, the simulator.
package fleet
