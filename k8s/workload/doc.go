// Package workload finds a cluster's workloads as kubectl names them
// (deploy/web, sts/db, ds/x, job/x, cronjob/x, pod/x, or by label selector,
// in one namespace or all) and reads their advice from the throttlelab
// agents on their nodes through the API server (the pods/proxy subresource
// of the agent pods, found by agentmanifest.PodSelector), as kubectl top
// needs nothing but the API server. It is the library behind `kubectl
// throttlelab advise deploy/NAME` and `kubectl throttlelab top -A`.
//
//	cfg, ns, err := workload.Connect(kubeconfig, context)
//	cs, err := kubernetes.NewForConfig(cfg)
//	ws, err := workload.Resolve(ctx, cs, workload.Query{Namespace: ns, Refs: []workload.Ref{ref}})
//	rows, err := workload.Advice(ctx, cs, ws) // the containers' advice, from their nodes' agents
//
// Errors are values: ErrBadRef and ErrNotFound are bad input (a workload
// that does not exist), ErrForbidden (RBAC), ErrNoAgent (a node without an
// agent) and ErrUnreachable (the API server or an agent) a source that
// could not be read; each message names the workload, node or verb.
package workload
