package workload

import (
	"errors"
	"fmt"
	"strings"
)

// Errors the package returns, wrapped with what failed.
var (
	// ErrBadRef: not a workload as kubectl names one (KIND/NAME).
	ErrBadRef = errors.New("not a workload reference")
	// ErrNotFound: no such workload, or it has no pods.
	ErrNotFound = errors.New("not found")
	// ErrForbidden: RBAC refused a request; the message names the verb and
	// resource.
	ErrForbidden = errors.New("forbidden")
	// ErrNoAgent: a node of the workload runs no throttlelab agent (or
	// none that is ready).
	ErrNoAgent = errors.New("no throttlelab agent")
	// ErrUnreachable: the API server, or an agent through it, did not
	// answer.
	ErrUnreachable = errors.New("unreachable")
)

// Kinds a Ref names, as the API names them.
const (
	Deployment  = "Deployment"
	StatefulSet = "StatefulSet"
	DaemonSet   = "DaemonSet"
	Job         = "Job"
	CronJob     = "CronJob"
	Pod         = "Pod"
	ReplicaSet  = "ReplicaSet"
)

// kindNames are the names kubectl accepts for each kind: short name,
// singular, plural, and plural.group.
var kindNames = map[string]string{}

func init() {
	for kind, names := range map[string][]string{
		Deployment:  {"deploy", "deployment", "deployments", "deployments.apps", "deployment.apps"},
		StatefulSet: {"sts", "statefulset", "statefulsets", "statefulsets.apps", "statefulset.apps"},
		DaemonSet:   {"ds", "daemonset", "daemonsets", "daemonsets.apps", "daemonset.apps"},
		ReplicaSet:  {"rs", "replicaset", "replicasets", "replicasets.apps", "replicaset.apps"},
		Job:         {"job", "jobs", "jobs.batch", "job.batch"},
		CronJob:     {"cj", "cronjob", "cronjobs", "cronjobs.batch", "cronjob.batch"},
		Pod:         {"po", "pod", "pods"},
	} {
		for _, n := range names {
			kindNames[n] = kind
		}
	}
}

// Ref is a workload as kubectl names it: a kind and a name.
type Ref struct {
	Kind, Name string
}

func (r Ref) String() string { return strings.ToLower(r.Kind) + "/" + r.Name }

// ParseRef reads KIND/NAME with any name kubectl gives the kind: deploy,
// deployment, deployments, deployments.apps, and so on for sts,
// statefulset, ds, daemonset, rs, replicaset, job, cj, cronjob, po, pod
// (case-insensitive kinds).
func ParseRef(s string) (Ref, error) {
	kind, name, ok := strings.Cut(s, "/")
	k := kindNames[strings.ToLower(kind)]
	if !ok || k == "" || name == "" || strings.Contains(name, "/") {
		return Ref{}, fmt.Errorf("%q: %w: give KIND/NAME, KIND one of deploy, sts, ds, rs, job, cronjob, pod (or their full names)", s, ErrBadRef)
	}
	return Ref{Kind: k, Name: name}, nil
}

// IsRef reports whether s names a workload (ParseRef takes it).
func IsRef(s string) bool {
	_, err := ParseRef(s)
	return err == nil
}
