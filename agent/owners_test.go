package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/watch"
)

func TestPodOwners(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/pods" || r.URL.Query().Get("fieldSelector") != "spec.nodeName=node-1" || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		w.Write([]byte(`{"items":[
 {"metadata":{"namespace":"shop","name":"cart-7d9f8b6c5d-x2x4q","uid":"1F2E3D4C-5B6A-4789-8ABC-DEF012345678","labels":{"pod-template-hash":"7d9f8b6c5d"},
   "ownerReferences":[{"kind":"ReplicaSet","name":"cart-7d9f8b6c5d","controller":true}]},
  "spec":{"containers":[{"name":"cart","resources":{"requests":{"cpu":"250m","memory":"64Mi"},"limits":{"cpu":"500m"}}}],
   "initContainers":[{"name":"migrate","resources":{"limits":{"cpu":"1"}}}]},
  "status":{"containerStatuses":[{"name":"cart","containerID":"containerd://c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1"}],
   "initContainerStatuses":[{"name":"migrate","containerID":"containerd://e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5"}]}},
 {"metadata":{"namespace":"web","name":"api-0","ownerReferences":[{"kind":"StatefulSet","name":"api","controller":true}]}},
 {"metadata":{"namespace":"kube-system","name":"kube-proxy-abcde","ownerReferences":[{"kind":"DaemonSet","name":"kube-proxy","controller":true}]}},
 {"metadata":{"namespace":"tools","name":"debug"}}]}`))
	}))
	defer srv.Close()
	p := &PodOwners{Server: srv.URL, Token: "tok", Node: "node-1"}
	got, err := p.Lookup(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[watch.PodName]Owner{
		{Namespace: "shop", Name: "cart-7d9f8b6c5d-x2x4q"}:   {"Deployment", "cart"},
		{Namespace: "web", Name: "api-0"}:                    {"StatefulSet", "api"},
		{Namespace: "kube-system", Name: "kube-proxy-abcde"}: {"DaemonSet", "kube-proxy"},
		{Namespace: "tools", Name: "debug"}:                  {"Pod", "debug"},
	}
	if len(got.Owners) != len(want) {
		t.Fatalf("%d owners, want %d: %v", len(got.Owners), len(want), got.Owners)
	}
	for k, v := range want {
		if got.Owners[k] != v {
			t.Errorf("%v: %v, want %v", k, got.Owners[k], v)
		}
	}
	// the spec's CPU resources (a request left out is the limit)
	cart := got.Spec[watch.PodName{Namespace: "shop", Name: "cart-7d9f8b6c5d-x2x4q"}]
	if cart["cart"] != (SpecCPU{RequestMilli: 250, LimitMilli: 500, HasRequest: true, HasLimit: true}) ||
		cart["migrate"] != (SpecCPU{RequestMilli: 1000, LimitMilli: 1000, HasRequest: true, HasLimit: true}) {
		t.Errorf("spec: %+v", cart)
	}
	if s := got.Spec[watch.PodName{Namespace: "tools", Name: "debug"}]; len(s) != 0 {
		t.Errorf("a pod without containers in its spec: %+v", s)
	}
	// the names, as top names a cgroup path with them
	for path, want := range map[string]string{
		"/kubepods/burstable/pod1f2e3d4c-5b6a-4789-8abc-def012345678/c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1": "shop/cart-7d9f8b6c5d-x2x4q/cart",
		"/kubepods/burstable/pod1f2e3d4c-5b6a-4789-8abc-def012345678/e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5": "shop/cart-7d9f8b6c5d-x2x4q/migrate",
	} {
		id := watch.Identify(path, got.Names)
		if g := id.Namespace + "/" + id.Pod + "/" + id.Container; g != want {
			t.Errorf("%s named %q, want %q", path, g, want)
		}
	}
	p.Token = "wrong"
	if _, err := p.Lookup(context.Background()); err == nil || !strings.Contains(err.Error(), "list on pods") {
		t.Fatalf("forbidden: %v, want an error naming the permission", err)
	}
}

func TestParseTarget(t *testing.T) {
	for _, tt := range []struct {
		in    string
		thr   float64
		delay string
		err   string
	}{
		{"throttled=0.01", 0.01, "0s", ""},
		{"throttled=5%", 0.05, "0s", ""},
		{"delay=10ms", 1, "10ms", ""},
		{"throttled=0.05,delay=20ms", 0.05, "20ms", ""},
		{"throttled=2", 0, "", "between 0 and 1"},
		{"delay=soon", 0, "", "duration"},
		{"p99", 0, "", "KEY=VALUE"},
		{"latency=1ms", 0, "", "unknown key"},
	} {
		got, err := ParseTarget(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: %v, want an error with %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got.MaxThrottled != tt.thr || got.MaxDelay.String() != tt.delay || got.Name != tt.in {
			t.Errorf("%q: %+v %v", tt.in, got, err)
		}
	}
}

// TestDefaultSelectSkipsSandboxes: a pod's containers are summarised, its
// sandbox (pause) container is not, nor a container outside Kubernetes.
func TestDefaultSelectSkipsSandboxes(t *testing.T) {
	uid := "1f2e3d4c-5b6a-4789-8abc-def012345678"
	for _, tt := range []struct {
		id   watch.Identity
		want bool
	}{
		{watch.Identity{Kind: watch.KindContainer, PodUID: uid, Container: "server"}, true},
		{watch.Identity{Kind: watch.KindContainer, PodUID: uid, Sandbox: true}, false},
		{watch.Identity{Kind: watch.KindContainer, Runtime: "docker"}, false},
	} {
		if got := DefaultSelect(tt.id); got != tt.want {
			t.Errorf("DefaultSelect(%+v) = %v, want %v", tt.id, got, tt.want)
		}
	}
}
