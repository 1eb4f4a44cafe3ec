package agentmanifest

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/internal/golden"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/throttlelab/throttlelab/k8s/k8stest"
)

// agentGolden are the rendered agent's cases: the default, and with the
// owner lookup, extra flags and a PodMonitor.
var agentGolden = map[string]Options{
	"agent":      {Image: "throttlelab:test"},
	"agent-full": {Image: "registry.example/throttlelab:v1", Namespace: "monitoring-agents", Owners: true, PodMonitor: true, Args: []string{"--window", "24h", "--max-throttled", "0.01", "--max-delay", "10ms"}},
}

func renderAgentYAML(t *testing.T, opt Options) []byte {
	t.Helper()
	m, err := Render(opt)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := m.WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestAgentGolden compares the agent's manifests with testdata (go test
// ./k8s/agentmanifest -run AgentGolden -update rewrites them).
func TestAgentGolden(t *testing.T) {
	for name, opt := range agentGolden {
		t.Run(name, func(t *testing.T) {
			got := renderAgentYAML(t, opt)
			if again := renderAgentYAML(t, opt); !bytes.Equal(got, again) {
				t.Fatal("two renders differ")
			}
			golden.Compare(t, filepath.Join("testdata", name+".yaml"), got)
		})
	}
}

func TestAgentBadOptions(t *testing.T) {
	for _, tt := range []struct {
		opt Options
		msg string
	}{
		{Options{}, "image"},
		{Options{Image: "throttlelab:test", Namespace: "Bad_NS"}, "namespace"},
		{Options{Image: "throttlelab:test", Port: 70000}, "port"},
	} {
		if _, err := Render(tt.opt); err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%+v: %v, want an error naming %s", tt.opt, err, tt.msg)
		}
	}
}

// TestAgentOnAPIServer applies the agent's manifests to a real
// kube-apiserver with a server-side dry run, in a namespace enforcing the
// profile they ask for (privileged); and shows that the next level down
// (baseline) rejects the DaemonSet's pods for their hostPath volumes and
// nothing else, and that the pod meets restricted once those are gone.
func TestAgentOnAPIServer(t *testing.T) {
	bin := k8stest.Binaries(t)
	cp := k8stest.Start(t, bin)
	w := &k8stest.Warnings{}
	a := k8stest.NewApplier(t, cp, w)
	ctx := context.Background()
	path := filepath.Join("testdata", "agent-full.yaml")
	docs := k8stest.ReadDocuments(t, path)
	if docs[0].GetKind() != "Namespace" {
		t.Fatalf("first document: %s", docs[0].GetKind())
	}
	a.Apply(ctx, t, path, docs[0], false)
	var ds *unstructured.Unstructured
	for _, d := range docs[1:] {
		if d.GetKind() == "PodMonitor" {
			continue // no Prometheus Operator CRDs on this API server
		}
		a.Apply(ctx, t, path, d, true)
		if d.GetKind() == "DaemonSet" {
			ds = d
		}
	}
	got := w.Take()
	if len(got) != 1 || !strings.Contains(got[0], "hostPath") {
		t.Errorf("warnings %q: want the baseline warning about hostPath volumes only", got)
	}
	// A pod from the DaemonSet's template, under baseline and restricted.
	pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod"}}
	spec, _, _ := unstructured.NestedMap(ds.Object, "spec", "template", "spec")
	pod.Object["spec"] = spec
	delete(spec, "serviceAccountName") // no such account in the test namespaces
	delete(spec, "priorityClassName")  // system-node-critical is for kube-system and privileged namespaces
	for _, level := range []string{"baseline", "restricted"} {
		ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": "agent-" + level, "labels": map[string]any{"pod-security.kubernetes.io/enforce": level}}}}
		a.Apply(ctx, t, path, ns, false)
		a.DefaultServiceAccount(ctx, t, "agent-"+level)
		p := pod.DeepCopy()
		p.SetName("agent")
		p.SetNamespace("agent-" + level)
		_, err := a.TryApply(ctx, p, true)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "hostPath") {
			t.Errorf("%s: %v, want forbidden for its hostPath volumes", level, err)
		}
		if strings.Contains(err.Error(), "seccomp") || strings.Contains(err.Error(), "runAsNonRoot") || strings.Contains(err.Error(), "capabilities") || strings.Contains(err.Error(), "allowPrivilegeEscalation") {
			t.Errorf("%s: %v: the pod breaks more than the hostPath rule", level, err)
		}
	}
}
