package workload

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/throttlelab/throttlelab/fleet"
	"github.com/throttlelab/throttlelab/k8s/agentmanifest"
	"github.com/throttlelab/throttlelab/k8s/k8stest"
)

func TestParseRef(t *testing.T) {
	for in, want := range map[string]Ref{
		"deploy/web": {Deployment, "web"}, "deployment/web": {Deployment, "web"}, "Deployments.apps/web": {Deployment, "web"},
		"sts/db": {StatefulSet, "db"}, "statefulset.apps/db": {StatefulSet, "db"}, "ds/x": {DaemonSet, "x"}, "daemonsets/x": {DaemonSet, "x"},
		"rs/web-5d": {ReplicaSet, "web-5d"}, "job/j": {Job, "j"}, "jobs.batch/j": {Job, "j"}, "cj/c": {CronJob, "c"}, "cronjob/c": {CronJob, "c"},
		"po/p": {Pod, "p"}, "pod/p": {Pod, "p"}, "pods/p": {Pod, "p"},
	} {
		got, err := ParseRef(in)
		if err != nil || got != want {
			t.Errorf("ParseRef(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"web", "deploy/", "svc/web", "deploy/a/b", "results/f09", "/web"} {
		if _, err := ParseRef(in); !errors.Is(err, ErrBadRef) {
			t.Errorf("ParseRef(%q): %v, want ErrBadRef", in, err)
		}
	}
}

// cluster is the objects the tests make on a real kube-apiserver (no
// controllers run there: the ReplicaSets, Jobs and pods are made as their
// controllers would make them, owner references and all).
type cluster struct {
	t   *testing.T
	cs  kubernetes.Interface
	cfg *rest.Config
	ctx context.Context
}

func ref(kind, name string, uid types.UID) []metav1.OwnerReference {
	t := true
	api := "apps/v1"
	if kind == Job || kind == CronJob {
		api = "batch/v1"
	}
	return []metav1.OwnerReference{{APIVersion: api, Kind: kind, Name: name, UID: uid, Controller: &t}}
}

func (c *cluster) pod(ns, name, node string, labels map[string]string, owners []metav1.OwnerReference, ready bool) *corev1.Pod {
	c.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, OwnerReferences: owners},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "app:1",
			Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9101}}}}}}
	p, err := c.cs.CoreV1().Pods(ns).Create(c.ctx, p, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	if ready {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if p, err = c.cs.CoreV1().Pods(ns).UpdateStatus(c.ctx, p, metav1.UpdateOptions{}); err != nil {
			c.t.Fatal(err)
		}
	}
	return p
}

func (c *cluster) namespace(name string) {
	c.t.Helper()
	if _, err := c.cs.CoreV1().Namespaces().Create(c.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}
	if _, err := c.cs.CoreV1().ServiceAccounts(name).Create(c.ctx, sa, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
}

// TestOnAPIServer resolves workloads on a real kube-apiserver: a
// Deployment's pods through its ReplicaSets (not a look-alike pod its
// selector matches but another ReplicaSet controls), a CronJob's through
// its Jobs, a StatefulSet's, a bare pod; -l and -A grouping pods by their
// workloads; a workload that does not exist; then the agents found by the
// chart's labels, a node without one, the proxy to an agent (which this
// API server, without a kubelet, cannot reach), and RBAC refusing each
// verb, every error naming what failed.
func TestOnAPIServer(t *testing.T) {
	bin := k8stest.Binaries(t)
	cp := k8stest.Start(t, bin)
	cfg := cp.RESTConfig(&k8stest.Warnings{})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := &cluster{t: t, cs: cs, cfg: cfg, ctx: ctx}
	c.namespace("shop")
	c.namespace("agents")

	web := map[string]string{"app": "web"}
	d, err := cs.AppsV1().Deployments("shop").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: web}, Template: podTemplate(web)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := cs.AppsV1().ReplicaSets("shop").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f7b9c4", OwnerReferences: ref(Deployment, "web", d.UID)},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: web}, Template: podTemplate(web)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stray, err := cs.AppsV1().ReplicaSets("shop").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "stray"},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: web}, Template: podTemplate(web)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.pod("shop", "web-5d8f7b9c4-aaaaa", "node-1", web, ref(ReplicaSet, rs.Name, rs.UID), true)
	c.pod("shop", "web-5d8f7b9c4-bbbbb", "node-2", web, ref(ReplicaSet, rs.Name, rs.UID), true)
	c.pod("shop", "stray-ccccc", "node-1", web, ref(ReplicaSet, stray.Name, stray.UID), true)

	db := map[string]string{"app": "db"}
	sts, err := cs.AppsV1().StatefulSets("shop").Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: db}, Template: podTemplate(db)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.pod("shop", "db-0", "node-1", db, ref(StatefulSet, "db", sts.UID), true)

	nightly := map[string]string{"app": "nightly"}
	cj, err := cs.BatchV1().CronJobs("shop").Create(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly"},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: func() corev1.PodTemplateSpec {
			p := podTemplate(nightly)
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			return p
		}()}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jobTmpl := podTemplate(nightly)
	jobTmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	job, err := cs.BatchV1().Jobs("shop").Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "nightly-29000000", OwnerReferences: ref(CronJob, "nightly", cj.UID)},
		Spec: batchv1.JobSpec{Template: jobTmpl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jobLabels := map[string]string{"app": "nightly", "batch.kubernetes.io/controller-uid": string(job.UID), "batch.kubernetes.io/job-name": job.Name, "controller-uid": string(job.UID), "job-name": job.Name}
	c.pod("shop", "nightly-29000000-ddddd", "node-2", jobLabels, ref(Job, job.Name, job.UID), false)
	c.pod("shop", "debug", "node-1", map[string]string{"app": "debug"}, nil, true)

	t.Run("by name", func(t *testing.T) {
		for _, tt := range []struct {
			ref  string
			pods []string
		}{
			{"deploy/web", []string{"web-5d8f7b9c4-aaaaa", "web-5d8f7b9c4-bbbbb"}},
			{"deployments.apps/web", []string{"web-5d8f7b9c4-aaaaa", "web-5d8f7b9c4-bbbbb"}},
			{"rs/stray", []string{"stray-ccccc"}},
			{"sts/db", []string{"db-0"}},
			{"cronjob/nightly", []string{"nightly-29000000-ddddd"}},
			{"job/nightly-29000000", []string{"nightly-29000000-ddddd"}},
			{"pod/debug", []string{"debug"}},
		} {
			r, err := ParseRef(tt.ref)
			if err != nil {
				t.Fatal(err)
			}
			ws, err := Resolve(ctx, cs, Query{Namespace: "shop", Refs: []Ref{r}})
			if err != nil {
				t.Errorf("%s: %v", tt.ref, err)
				continue
			}
			var got []string
			for _, p := range ws[0].Pods {
				got = append(got, p.Name)
			}
			if len(ws) != 1 || !reflect.DeepEqual(got, tt.pods) {
				t.Errorf("%s: %v, want one workload with pods %v", tt.ref, ws, tt.pods)
			}
		}
	})

	t.Run("by selector", func(t *testing.T) {
		ws, err := Resolve(ctx, cs, Query{AllNamespaces: true, Selector: "app in (web,nightly)"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, w := range ws {
			got = append(got, w.String())
		}
		want := []string{"shop/cronjob/nightly", "shop/deployment/web", "shop/replicaset/stray"}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("-A -l app in (web,nightly): %v, want %v", got, want)
		}
		if _, err := Resolve(ctx, cs, Query{Namespace: "shop", Selector: "app=nothing"}); !errors.Is(err, ErrNotFound) {
			t.Errorf("a selector matching nothing: %v, want ErrNotFound", err)
		}
		if _, err := Resolve(ctx, cs, Query{Namespace: "shop", Selector: "app=(("}); !errors.Is(err, ErrBadRef) {
			t.Errorf("a bad selector: %v, want ErrBadRef", err)
		}
	})

	t.Run("not found", func(t *testing.T) {
		for _, q := range []Query{
			{Namespace: "shop", Refs: []Ref{{Deployment, "nope"}}},
			{Namespace: "other", Refs: []Ref{{Deployment, "web"}}},
			{Namespace: "shop", Refs: []Ref{{Pod, "nope"}}},
		} {
			_, err := Resolve(ctx, cs, q)
			if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), strings.ToLower(q.Refs[0].Kind)+"s/"+q.Refs[0].Name) || !strings.Contains(err.Error(), "namespace "+q.Namespace) {
				t.Errorf("%v: %v, want ErrNotFound naming the workload and namespace", q, err)
			}
		}
		if _, err := Resolve(ctx, cs, Query{AllNamespaces: true, Refs: []Ref{{Deployment, "web"}}}); !errors.Is(err, ErrBadRef) {
			t.Errorf("a name with -A: %v, want ErrBadRef", err)
		}
	})

	t.Run("agents", func(t *testing.T) {
		r, err := NewReader(cfg)
		if err != nil {
			t.Fatal(err)
		}
		web := mustResolve(t, cs, "shop", "deploy/web")
		if _, _, err := r.Advice(ctx, web); !errors.Is(err, ErrNoAgent) || !strings.Contains(err.Error(), "node-1") {
			t.Errorf("no agent anywhere: %v, want ErrNoAgent naming node-1", err)
		}
		labels := map[string]string{"app.kubernetes.io/instance": "throttlelab-agent"}
		for k, v := range agentmanifest.PodSelector {
			labels[k] = v
		}
		c.pod("agents", "agent-n1", "node-1", labels, nil, true)
		c.pod("agents", "agent-n2-starting", "node-2", labels, nil, false)
		agents, err := Agents(ctx, cs)
		if err != nil {
			t.Fatal(err)
		}
		if want := (map[string]Agent{"node-1": {Node: "node-1", Namespace: "agents", Pod: "agent-n1", Port: 9101}}); !reflect.DeepEqual(agents, want) {
			t.Errorf("agents %v, want %v (a pod that is not ready is no agent)", agents, want)
		}
		_, _, err = r.Advice(ctx, web)
		if !errors.Is(err, ErrNoAgent) && !errors.Is(err, ErrUnreachable) {
			t.Errorf("web on node-1 (agent) and node-2 (none): %v", err)
		}
		// node-1's agent through the API server: the proxy needs the
		// kubelet's node, which this API server does not have.
		_, _, err = r.Advice(ctx, mustResolve(t, cs, "shop", "sts/db"))
		if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "node node-1") || !strings.Contains(err.Error(), "agents/agent-n1") {
			t.Errorf("db on node-1: %v, want ErrUnreachable naming the node and the agent pod", err)
		}
		if _, err := r.All(ctx); !errors.Is(err, ErrUnreachable) {
			t.Errorf("top -A: %v, want node-1's agent unreachable", err)
		}
		base, err := agents["node-1"].ProxyBase(cfg)
		if err != nil || base != cp.URL+"/api/v1/namespaces/agents/pods/agent-n1:9101/proxy" {
			t.Errorf("proxy base %q, %v", base, err)
		}
	})

	t.Run("forbidden", func(t *testing.T) {
		// A user who may read shop's deployments, replicasets and pods, and
		// nothing else: not the agents in every namespace, nor their proxy.
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: "shop"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"", "apps"}, Resources: []string{"deployments", "replicasets", "pods"}, Verbs: []string{"get", "list"}}}}
		if _, err := cs.RbacV1().Roles("shop").Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: "shop"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "reader"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "reader"}}}
		if _, err := cs.RbacV1().RoleBindings("shop").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		limited := rest.CopyConfig(cfg)
		limited.Impersonate = rest.ImpersonationConfig{UserName: "reader"}
		r, err := NewReader(limited)
		if err != nil {
			t.Fatal(err)
		}
		// The RBAC authorizer sees the new binding through its informers:
		// wait until the reader may read what it grants.
		k8stest.AwaitRBAC(t, "the reader getting deploy/web", func() error {
			_, err := r.Clientset().AppsV1().Deployments("shop").Get(ctx, "web", metav1.GetOptions{})
			return err
		})
		web, err := Resolve(ctx, r.Clientset(), Query{Namespace: "shop", Refs: []Ref{{Deployment, "web"}}})
		if err != nil {
			t.Fatalf("the reader resolving deploy/web: %v", err)
		}
		if _, _, err := r.Advice(ctx, web); !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "list pods in every namespace") {
			t.Errorf("the reader finding the agents: %v, want ErrForbidden naming list pods in every namespace", err)
		}
		if _, err := Resolve(ctx, r.Clientset(), Query{Namespace: "shop", Refs: []Ref{{StatefulSet, "db"}}}); !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "get statefulsets in namespace shop") {
			t.Errorf("the reader getting sts/db: %v, want ErrForbidden naming get statefulsets", err)
		}
		if _, err := r.ReadAgent(ctx, Agent{Node: "node-1", Namespace: "agents", Pod: "agent-n1", Port: 9101}); !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "get pods/proxy") {
			t.Errorf("the reader through the proxy: %v, want ErrForbidden naming get pods/proxy", err)
		}
	})

	t.Run("kubeconfig", func(t *testing.T) {
		// As kubectl: KUBECONFIG, the context's namespace.
		t.Setenv("KUBECONFIG", cp.Kubeconfig(t, "shop"))
		got, ns, err := Connect("", "")
		if err != nil || ns != "shop" || got.Host != cp.URL {
			t.Fatalf("Connect: %v %q %v", got, ns, err)
		}
		if _, _, err := Connect("", "nope"); err == nil {
			t.Error("a context that does not exist: no error")
		}
		os.Unsetenv("KUBECONFIG")
	})

	t.Run("select", func(t *testing.T) {
		rows := []*fleet.Container{{Namespace: "shop", Pod: "web-5d8f7b9c4-aaaaa"}, {Namespace: "shop", Pod: "stray-ccccc"}, {Namespace: "other", Pod: "web-5d8f7b9c4-aaaaa"}}
		got := Select(rows, mustResolve(t, cs, "shop", "deploy/web"))
		if len(got) != 1 || got[0] != rows[0] {
			t.Errorf("Select: %v, want the first row only", got)
		}
	})
}

func mustResolve(t *testing.T, cs kubernetes.Interface, ns, s string) []Workload {
	t.Helper()
	r, err := ParseRef(s)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := Resolve(context.Background(), cs, Query{Namespace: ns, Refs: []Ref{r}})
	if err != nil {
		t.Fatal(err)
	}
	return ws
}
