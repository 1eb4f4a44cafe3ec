package workload

import (
	"context"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/throttlelab/throttlelab/fleet"
)

// Connect loads the client configuration as kubectl does: the kubeconfig
// file given, else $KUBECONFIG, else ~/.kube/config, else the pod's
// in-cluster account; context the one named or the current one. It
// returns the context's namespace too ("default" if it names none).
func Connect(kubeconfig, context string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("loading the kubeconfig: %w (name a kubeconfig file, or set KUBECONFIG)", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	return cfg, ns, nil
}

// Query selects workloads: Refs by name in Namespace; or, with no Refs,
// every workload with a pod that Selector (a label selector) matches, in
// Namespace or in every namespace (AllNamespaces).
type Query struct {
	Refs          []Ref
	Namespace     string
	AllNamespaces bool
	Selector      string
}

// PodRef is one pod of a workload and the node it runs on ("" if not
// scheduled).
type PodRef struct {
	Namespace, Name, Node string
}

// Workload is a workload and its pods.
type Workload struct {
	Namespace, Kind, Name string
	Pods                  []PodRef
}

func (w Workload) String() string { return w.Namespace + "/" + Ref{w.Kind, w.Name}.String() }

// Resolve finds the workloads q names and their pods. A workload that does
// not exist is ErrNotFound, one without pods too; a request RBAC refuses
// is ErrForbidden naming the verb and resource.
func Resolve(ctx context.Context, cs kubernetes.Interface, q Query) ([]Workload, error) {
	if len(q.Refs) > 0 && q.AllNamespaces {
		return nil, fmt.Errorf("%s: %w: a workload by name is in one namespace, not every namespace (all namespaces go with a selector, or with none)", q.Refs[0], ErrBadRef)
	}
	if len(q.Refs) > 0 && q.Selector != "" {
		return nil, fmt.Errorf("%s: %w: give workloads by name or a label selector, not both", q.Refs[0], ErrBadRef)
	}
	ns := q.Namespace
	if q.AllNamespaces {
		ns = metav1.NamespaceAll
	}
	if len(q.Refs) == 0 {
		return bySelector(ctx, cs, ns, q.Selector)
	}
	var out []Workload
	for _, r := range q.Refs {
		w, err := byName(ctx, cs, ns, r)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// apiError turns an API error into one of the package's, naming what was
// asked.
func apiError(err error, verb, resource, ns, name string) error {
	where := "namespace " + ns
	if ns == "" {
		where = "every namespace"
	}
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s/%s in %s: %w", resource, name, where, ErrNotFound)
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s %s in %s: %w (RBAC): %v", verb, resource, where, ErrForbidden, apierrors.ReasonForError(err))
	}
	return fmt.Errorf("%s %s in %s: the API server is %w: %v", verb, resource, where, ErrUnreachable, err)
}

// byName finds one workload by name and its pods: those its selector
// matches that it controls (through its ReplicaSets or Jobs).
func byName(ctx context.Context, cs kubernetes.Interface, ns string, r Ref) (Workload, error) {
	w := Workload{Namespace: ns, Kind: r.Kind, Name: r.Name}
	var (
		uid      types.UID
		selector *metav1.LabelSelector
		err      error
		resource string
	)
	switch r.Kind {
	case Pod:
		p, err := cs.CoreV1().Pods(ns).Get(ctx, r.Name, metav1.GetOptions{})
		if err != nil {
			return w, apiError(err, "get", "pods", ns, r.Name)
		}
		w.Pods = []PodRef{{ns, p.Name, p.Spec.NodeName}}
		return w, nil
	case Deployment:
		resource = "deployments"
		o, e := cs.AppsV1().Deployments(ns).Get(ctx, r.Name, metav1.GetOptions{})
		if err = e; err == nil {
			uid, selector = o.UID, o.Spec.Selector
		}
	case StatefulSet:
		resource = "statefulsets"
		o, e := cs.AppsV1().StatefulSets(ns).Get(ctx, r.Name, metav1.GetOptions{})
		if err = e; err == nil {
			uid, selector = o.UID, o.Spec.Selector
		}
	case DaemonSet:
		resource = "daemonsets"
		o, e := cs.AppsV1().DaemonSets(ns).Get(ctx, r.Name, metav1.GetOptions{})
		if err = e; err == nil {
			uid, selector = o.UID, o.Spec.Selector
		}
	case ReplicaSet:
		resource = "replicasets"
		o, e := cs.AppsV1().ReplicaSets(ns).Get(ctx, r.Name, metav1.GetOptions{})
		if err = e; err == nil {
			uid, selector = o.UID, o.Spec.Selector
		}
	case Job:
		resource = "jobs"
		o, e := cs.BatchV1().Jobs(ns).Get(ctx, r.Name, metav1.GetOptions{})
		if err = e; err == nil {
			uid, selector = o.UID, o.Spec.Selector
		}
	case CronJob:
		resource = "cronjobs"
		o, e := cs.BatchV1().CronJobs(ns).Get(ctx, r.Name, metav1.GetOptions{})
		if err = e; err == nil {
			uid = o.UID
		}
	default:
		return w, fmt.Errorf("%s: %w", r, ErrBadRef)
	}
	if err != nil {
		return w, apiError(err, "get", resource, ns, r.Name)
	}
	// The controllers between the workload and its pods: a Deployment's
	// ReplicaSets, a CronJob's Jobs.
	owners := map[types.UID]bool{uid: true}
	switch r.Kind {
	case Deployment:
		// By owner, not by the selector: the ReplicaSets' own labels are
		// the controller's to set.
		rss, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return w, apiError(err, "list", "replicasets", ns, "")
		}
		owners = map[types.UID]bool{}
		for _, rs := range rss.Items {
			if controlledBy(rs.OwnerReferences, uid) {
				owners[rs.UID] = true
			}
		}
	case CronJob:
		jobs, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return w, apiError(err, "list", "jobs", ns, "")
		}
		owners = map[types.UID]bool{}
		for _, j := range jobs.Items {
			if controlledBy(j.OwnerReferences, uid) {
				owners[j.UID] = true
			}
		}
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, listOptions(selector))
	if err != nil {
		return w, apiError(err, "list", "pods", ns, "")
	}
	for _, p := range pods.Items {
		for u := range owners {
			if controlledBy(p.OwnerReferences, u) {
				w.Pods = append(w.Pods, PodRef{ns, p.Name, p.Spec.NodeName})
				break
			}
		}
	}
	if len(w.Pods) == 0 {
		return w, fmt.Errorf("%s in namespace %s has no pods: %w", r, ns, ErrNotFound)
	}
	sortPods(w.Pods)
	return w, nil
}

// listOptions lists what a workload's selector matches (nil: everything,
// as a CronJob's pods are found through its Jobs).
func listOptions(s *metav1.LabelSelector) metav1.ListOptions {
	if s == nil {
		return metav1.ListOptions{}
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return metav1.ListOptions{}
	}
	return metav1.ListOptions{LabelSelector: sel.String()}
}

func controlledBy(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, o := range refs {
		if o.UID == uid && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}

func controllerOf(refs []metav1.OwnerReference) *metav1.OwnerReference {
	for i := range refs {
		if refs[i].Controller != nil && *refs[i].Controller {
			return &refs[i]
		}
	}
	return nil
}

// bySelector finds the pods the selector matches in ns ("" for every
// namespace) and groups them by the workload that controls them: a
// ReplicaSet's Deployment, a Job's CronJob, the controller otherwise, the
// pod itself when it has none.
func bySelector(ctx context.Context, cs kubernetes.Interface, ns, selector string) ([]Workload, error) {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		var se *apierrors.StatusError
		if errors.As(err, &se) && se.ErrStatus.Code == 400 {
			return nil, fmt.Errorf("selector %q: %w: %v", selector, ErrBadRef, se.ErrStatus.Message)
		}
		return nil, apiError(err, "list", "pods", ns, "")
	}
	// The owners of ReplicaSets and Jobs, looked up only when a pod needs them.
	parents := map[types.UID]*metav1.OwnerReference{}
	looked := map[string]bool{}
	lookup := func(kind, podNS string) error {
		if looked[kind+"/"+podNS] {
			return nil
		}
		looked[kind+"/"+podNS] = true
		if kind == ReplicaSet {
			l, err := cs.AppsV1().ReplicaSets(podNS).List(ctx, metav1.ListOptions{})
			if err != nil {
				return apiError(err, "list", "replicasets", podNS, "")
			}
			for i := range l.Items {
				parents[l.Items[i].UID] = controllerOf(l.Items[i].OwnerReferences)
			}
			return nil
		}
		l, err := cs.BatchV1().Jobs(podNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return apiError(err, "list", "jobs", podNS, "")
		}
		for i := range l.Items {
			parents[l.Items[i].UID] = controllerOf(l.Items[i].OwnerReferences)
		}
		return nil
	}
	by := map[string]*Workload{}
	var order []string
	for _, p := range pods.Items {
		kind, name := Pod, p.Name
		if c := controllerOf(p.OwnerReferences); c != nil {
			kind, name = c.Kind, c.Name
			if kind == ReplicaSet || kind == Job {
				if err := lookup(kind, p.Namespace); err != nil {
					return nil, err
				}
				if up := parents[c.UID]; up != nil {
					kind, name = up.Kind, up.Name
				}
			}
		}
		k := p.Namespace + "/" + kind + "/" + name
		w := by[k]
		if w == nil {
			w = &Workload{Namespace: p.Namespace, Kind: kind, Name: name}
			by[k] = w
			order = append(order, k)
		}
		w.Pods = append(w.Pods, PodRef{p.Namespace, p.Name, p.Spec.NodeName})
	}
	if len(order) == 0 {
		where := "namespace " + ns
		if ns == "" {
			where = "any namespace"
		}
		return nil, fmt.Errorf("no pods match %q in %s: %w", selector, where, ErrNotFound)
	}
	sort.Strings(order)
	out := make([]Workload, 0, len(order))
	for _, k := range order {
		sortPods(by[k].Pods)
		out = append(out, *by[k])
	}
	return out, nil
}

func sortPods(ps []PodRef) {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Namespace != ps[j].Namespace {
			return ps[i].Namespace < ps[j].Namespace
		}
		return ps[i].Name < ps[j].Name
	})
}

// podReady reports whether a pod runs and is ready.
func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Select keeps the containers of the workloads' pods (rows read from
// Prometheus or agents).
func Select(rows []*fleet.Container, ws []Workload) []*fleet.Container {
	want := map[string]bool{}
	for _, w := range ws {
		for _, p := range w.Pods {
			want[p.Namespace+"/"+p.Name] = true
		}
	}
	var out []*fleet.Container
	for _, c := range rows {
		if want[c.Namespace+"/"+c.Pod] {
			out = append(out, c)
		}
	}
	return out
}
