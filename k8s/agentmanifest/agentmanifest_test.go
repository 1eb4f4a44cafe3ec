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
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/throttlelab/throttlelab/k8s/k8stest"
)

// agentGolden are the rendered agent's cases: the default (state on a
// hostPath), and another release with the owner lookup, extra flags, a
// PodMonitor, its namespace made and its state in an emptyDir; and the
// default in the host's PID namespace (the runtime read from /proc).
var agentGolden = map[string]Options{
	"agent":          {Image: "throttlelab:test"},
	"agent-hostproc": {Image: "throttlelab:test", HostProc: true},
	"agent-full": {Image: "registry.example/throttlelab:v1", Namespace: "monitoring-agents", Release: "nodes", CreateNamespace: true, StateEmptyDir: true,
		Owners: true, PodMonitor: true, Args: []string{"--window", "24h", "--max-throttled", "0.01", "--max-delay", "10ms"}},
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
		{Options{Image: "throttlelab:test", Release: "Bad"}, "release"},
		{Options{Image: "throttlelab:test", Release: strings.Repeat("r", 54)}, "release"},
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
// nothing else (the state directory's init container, root with CAP_CHOWN,
// is within baseline), and that with its state in an emptyDir the pod
// meets restricted once the hostPath volumes are gone.
func TestAgentOnAPIServer(t *testing.T) {
	bin := k8stest.Binaries(t)
	cp := k8stest.Start(t, bin)
	w := &k8stest.Warnings{}
	a := k8stest.NewApplier(t, cp, w)
	ctx := context.Background()
	templates := map[string]map[string]any{}
	for _, name := range []string{"agent-full", "agent"} {
		path := filepath.Join("testdata", name+".yaml")
		docs := k8stest.ReadDocuments(t, path)
		if docs[0].GetKind() == "Namespace" {
			a.Apply(ctx, t, path, docs[0], false)
			docs = docs[1:]
		} else {
			// The agent's namespace, as the chart's namespace.create makes it.
			ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
				"metadata": map[string]any{"name": docs[0].GetNamespace(), "labels": map[string]any{"pod-security.kubernetes.io/enforce": "privileged", "pod-security.kubernetes.io/warn": "baseline"}}}}
			a.Apply(ctx, t, path, ns, false)
		}
		for _, d := range docs {
			if d.GetKind() == "PodMonitor" {
				continue // no Prometheus Operator CRDs on this API server
			}
			a.Apply(ctx, t, path, d, true)
			if d.GetKind() == "DaemonSet" {
				templates[name], _, _ = unstructured.NestedMap(d.Object, "spec", "template", "spec")
			}
		}
		got := w.Take()
		if len(got) != 1 || !strings.Contains(got[0], "hostPath") {
			t.Errorf("%s: warnings %q: want the baseline warning about hostPath volumes only", name, got)
		}
	}
	// A pod from each DaemonSet's template, under baseline and restricted.
	for _, c := range []struct{ name, level string }{{"agent", "baseline"}, {"agent-full", "baseline"}, {"agent-full", "restricted"}} {
		ns := "agent-" + c.level
		nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": ns, "labels": map[string]any{"pod-security.kubernetes.io/enforce": c.level}}}}
		a.Apply(ctx, t, c.name, nsObj, false)
		a.DefaultServiceAccount(ctx, t, ns)
		spec := runtime.DeepCopyJSON(templates[c.name])
		delete(spec, "serviceAccountName") // no such account in the test namespaces
		delete(spec, "priorityClassName")  // system-node-critical is for kube-system and privileged namespaces
		p := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "spec": spec}}
		p.SetName("agent")
		p.SetNamespace(ns)
		_, err := a.TryApply(ctx, p, true)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "hostPath") {
			t.Errorf("%s under %s: %v, want forbidden for its hostPath volumes", c.name, c.level, err)
		}
		if strings.Contains(err.Error(), "seccomp") || strings.Contains(err.Error(), "runAsNonRoot") || strings.Contains(err.Error(), "capabilities") || strings.Contains(err.Error(), "allowPrivilegeEscalation") {
			t.Errorf("%s under %s: %v: the pod breaks more than the hostPath rule", c.name, c.level, err)
		}
	}
}
