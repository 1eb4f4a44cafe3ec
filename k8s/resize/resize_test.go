package resize

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/throttlelab/throttlelab/fleet"
	"github.com/throttlelab/throttlelab/k8s/k8stest"
)

// resizePod is a pod with one container app and the given CPU request and
// limit (memory request = limit, so that cpu request = limit is Guaranteed).
func resizePod(name string, requestMilli, limitMilli int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(requestMilli, resource.DecimalSI), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(limitMilli, resource.DecimalSI), corev1.ResourceMemory: resource.MustParse("64Mi")},
			}}}},
	}
}

func limitOf(t *testing.T, cs kubernetes.Interface, pod string) (limit, request int64) {
	t.Helper()
	p, err := cs.CoreV1().Pods("shop").Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := p.Spec.Containers[0].Resources
	return r.Limits.Cpu().MilliValue(), r.Requests.Cpu().MilliValue()
}

// createShop makes the namespace shop and its default service account
// (which a controller manager would make; the pods' admission needs it).
func createShop(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts("shop").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// rows plans resizes as fleet does and hands them over as the CLI does.
func rows() []Row {
	return resizeRows([]*fleet.Resize{
		{Namespace: "shop", Pod: "web-1", Container: "app", FromLimitMilli: 500, ToLimitMilli: 900, FromRequestMilli: 250},
		{Namespace: "shop", Pod: "web-2", Container: "app", FromLimitMilli: 500, ToLimitMilli: 900, FromRequestMilli: 250},
		{Namespace: "shop", Pod: "db-0", Container: "app", FromLimitMilli: 2000, ToLimitMilli: 1500, FromRequestMilli: 2000, ToRequestMilli: 1500},
		{Namespace: "shop", Pod: "web-3", Container: "app", Skip: "no advice: no samples yet"},
	})
}

func resizeRows(rs []*fleet.Resize) []Row {
	out := make([]Row, len(rs))
	for i, r := range rs {
		out[i] = Row{Namespace: r.Namespace, Pod: r.Pod, Container: r.Container, FromLimitMilli: r.FromLimitMilli, Patch: r.ResizePatch(), Skip: r.Skip}
	}
	return out
}

// TestResizeOnAPIServer resizes pods in place through a real
// kube-apiserver's pods/resize: a dry run changes nothing, a row whose pod
// was resized meanwhile or a user whom RBAC forbids resize stops every row
// before anything is applied, a stale resourceVersion is a conflict, and
// the real run sets the limits (and the request of a pod whose request is
// its limit).
func TestResizeOnAPIServer(t *testing.T) {
	bin := k8stest.Binaries(t)
	started := time.Now()
	cp := k8stest.Start(t, bin)
	t.Logf("etcd and kube-apiserver ready in %s", time.Since(started).Round(100*time.Millisecond))
	ctx := context.Background()
	cfg := cp.RESTConfig(&k8stest.Warnings{})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	createShop(t, cs)
	for _, p := range []*corev1.Pod{resizePod("web-1", 250, 500), resizePod("web-2", 250, 500), resizePod("db-0", 2000, 2000)} {
		if _, err := cs.CoreV1().Pods("shop").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	unchanged := func(when string) {
		t.Helper()
		for pod, want := range map[string]int64{"web-1": 500, "web-2": 500, "db-0": 2000} {
			if l, _ := limitOf(t, cs, pod); l != want {
				t.Errorf("%s: %s has limit %dm, want %dm untouched", when, pod, l, want)
			}
		}
	}

	// A dry run: every row passes the server's dry run, nothing changes.
	res, err := Resize(ctx, cfg, rows(), false)
	if err != nil {
		t.Fatalf("dry run: %v %+v", err, res)
	}
	for i, r := range res[:3] {
		if r.Status != "dry run: ok" {
			t.Errorf("dry run: %s: %s %s", rows()[i].Pod, r.Status, r.Reason)
		}
	}
	if res[3].Status != "skipped" {
		t.Errorf("a planned skip: %+v", res[3])
	}
	unchanged("after the dry run")

	// Someone resized web-2 since the advice: no row is applied.
	rs := rows()
	rs[1].FromLimitMilli = 400 // someone resized web-2 since
	res, err = Resize(ctx, cfg, rs, true)
	if !errors.Is(err, ErrNotApplied) || res[1].Status != "failed" || !strings.Contains(res[1].Reason, "resized by someone else meanwhile: the limit is now 500m") ||
		res[0].Status != "not applied" || res[2].Status != "not applied" {
		t.Errorf("a row resized meanwhile: %v %+v", err, res)
	}
	unchanged("after a row failed validation")

	// A user whom RBAC lets read and patch pods but not pods/resize.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pods-no-resize", Namespace: "shop"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "patch"}}}}
	if _, err := cs.RbacV1().Roles("shop").Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: "shop"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice", APIGroup: "rbac.authorization.k8s.io"}},
		RoleRef:  rbacv1.RoleRef{Kind: "Role", Name: "pods-no-resize", APIGroup: "rbac.authorization.k8s.io"}}
	if _, err := cs.RbacV1().RoleBindings("shop").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	alice := rest.CopyConfig(cfg)
	alice.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
	// The RBAC authorizer sees the new binding through its informers: wait
	// until alice may read the pods (what the binding grants).
	acs, err := kubernetes.NewForConfig(alice)
	if err != nil {
		t.Fatal(err)
	}
	k8stest.AwaitRBAC(t, "alice reading a pod", func() error {
		_, err := acs.CoreV1().Pods("shop").Get(ctx, "web-1", metav1.GetOptions{})
		return err
	})
	res, err = Resize(ctx, alice, rows(), true)
	if !errors.Is(err, ErrNotApplied) {
		t.Errorf("RBAC without pods/resize: %v", err)
	}
	for i, r := range res[:3] {
		if r.Status != "failed" || !strings.Contains(r.Reason, "RBAC forbids resizing: grant patch on pods/resize in namespace shop") {
			t.Errorf("RBAC without pods/resize: %s: %s %s", rows()[i].Pod, r.Status, r.Reason)
		}
	}
	unchanged("after RBAC refused")

	// A resourceVersion gone stale between validation and the patch is the
	// API server's conflict, not an overwrite.
	p, err := cs.CoreV1().Pods("shop").Get(ctx, "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := p.ResourceVersion
	p.Labels = map[string]string{"touched": "yes"}
	if _, err := cs.CoreV1().Pods("shop").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if why := patchResize(ctx, cs, rows()[0], stale, false); !strings.Contains(why, "is stale") {
		t.Errorf("a stale resourceVersion: %q, want a conflict", why)
	}
	unchanged("after a conflict")

	// For real.
	res, err = Resize(ctx, cfg, rows(), true)
	if err != nil {
		t.Fatalf("apply: %v %+v", err, res)
	}
	for pod, want := range map[string][2]int64{"web-1": {900, 250}, "web-2": {900, 250}, "db-0": {1500, 1500}} {
		l, r := limitOf(t, cs, pod)
		if l != want[0] || r != want[1] {
			t.Errorf("after apply: %s limit %dm request %dm, want %dm %dm", pod, l, r, want[0], want[1])
		}
	}
	for i, r := range res[:3] {
		if r.Status != "applied" {
			t.Errorf("apply: %s: %s %s", rows()[i].Pod, r.Status, r.Reason)
		}
	}
	// Advice made before the resize is now stale.
	res, err = Resize(ctx, cfg, rows()[:1], false)
	if !errors.Is(err, ErrNotApplied) || !strings.Contains(res[0].Reason, "the limit is now 900m, the advice was made at 500m") {
		t.Errorf("advice older than the resize: %v %+v", err, res)
	}
	// A limit alone on a pod whose request is its limit would change its
	// QoS class: the API server refuses it, and the row says so.
	res, err = Resize(ctx, cfg, resizeRows([]*fleet.Resize{{Namespace: "shop", Pod: "db-0", Container: "app", FromLimitMilli: 1500, ToLimitMilli: 1800, FromRequestMilli: 1500}}), false)
	if !errors.Is(err, ErrNotApplied) || !strings.Contains(res[0].Reason, "the API server refused it") {
		t.Errorf("a resize that changes the QoS class: %v %+v", err, res)
	}
	t.Logf("a QoS-changing resize: %s", res[0].Reason)
}
