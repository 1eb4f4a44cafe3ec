package k8s

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/throttlelab/throttlelab/experiment"
)

// TestGoldenOnAPIServer applies every document of every golden file to a
// real kube-apiserver with a server-side dry run, in namespaces whose Pod
// Security admission enforces the restricted profile: any field the API or
// the profile rejects is an error, and any warning (what Pod Security says
// about a Job's pods) fails the test too. The API server's QoS class of each
// server pod must be the local backend's class for its config.
func TestGoldenOnAPIServer(t *testing.T) {
	bin := controlPlaneBinaries(t)
	started := time.Now()
	cp := startControlPlane(t, bin)
	t.Logf("etcd and kube-apiserver ready in %s", time.Since(started).Round(100*time.Millisecond))
	w := &warnings{}
	a := newApplier(t, cp, w)
	ctx := context.Background()

	specs := map[string]*experiment.Experiment{}
	for _, c := range goldenCases(t) {
		e, err := c.load()
		if err != nil {
			t.Fatal(err)
		}
		specs[c.name] = e
	}
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.yaml"))
	if err != nil || len(files) < 5 {
		t.Fatalf("golden files: %v %v", files, err)
	}
	applied := 0
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		e := specs[name]
		if e == nil {
			t.Fatalf("%s is the golden file of no example or preset: remove it (go test -run Golden -update)", f)
		}
		docs := readDocuments(t, f)
		if docs[0].GetKind() != "Namespace" {
			t.Fatalf("%s: the first document is a %s, not the Namespace", f, docs[0].GetKind())
		}
		// The namespace is created for real (after its own dry run): the
		// pods' admission reads its Pod Security labels.
		a.apply(ctx, t, f, docs[0], true)
		a.apply(ctx, t, f, docs[0], false)
		a.defaultServiceAccount(ctx, t, docs[0].GetName())
		for _, d := range docs[1:] {
			out := a.apply(ctx, t, f, d, true)
			applied++
			if d.GetKind() == "Pod" && d.GetLabels()["app.kubernetes.io/component"] == "server" {
				checkQoS(t, f, e, out)
			}
		}
		for _, warning := range w.take() {
			t.Errorf("%s: the API server warned: %s", f, warning)
		}
	}
	t.Logf("%d golden files, %d objects dry-run applied in %s", len(files), applied, time.Since(started).Round(100*time.Millisecond))

	// The rig sees what it must: a pod the restricted profile rejects fails,
	// and a Job whose pods it would reject warns.
	t.Run("rejects", func(t *testing.T) {
		docs := readDocuments(t, filepath.Join("testdata", "golden", "example-limits.yaml"))
		for _, d := range docs[1:] {
			switch d.GetKind() {
			case "Pod":
				bad := d.DeepCopy()
				unstructured.RemoveNestedField(bad.Object, "spec", "securityContext", "seccompProfile")
				_, err := a.tryApply(ctx, bad, true)
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "restricted") {
					t.Errorf("a pod without a seccomp profile: %v, want forbidden by the restricted profile", err)
				}
			case "Job":
				bad := d.DeepCopy()
				containers, _, _ := unstructured.NestedSlice(bad.Object, "spec", "template", "spec", "containers")
				unstructured.SetNestedField(containers[0].(map[string]any), true, "securityContext", "allowPrivilegeEscalation")
				unstructured.SetNestedSlice(bad.Object, containers, "spec", "template", "spec", "containers")
				if _, err := a.tryApply(ctx, bad, true); err != nil {
					t.Errorf("a Job that allows privilege escalation: %v, want a warning only", err)
				}
				if got := w.take(); len(got) == 0 || !strings.Contains(strings.Join(got, " "), "allowPrivilegeEscalation") {
					t.Errorf("a Job that allows privilege escalation: warnings %q", got)
				}
			}
		}
	})
}

// applier applies unstructured objects through the dynamic client.
type applier struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
	cs     kubernetes.Interface
}

func newApplier(t *testing.T, cp *controlPlane, w *warnings) *applier {
	t.Helper()
	cfg := cp.restConfig(w)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(dc)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{dyn: dyn, mapper: restmapper.NewDiscoveryRESTMapper(groups), cs: cs}
}

// apply applies one object (server-side apply, a dry run if dryRun) and
// fails the test on any error.
func (a *applier) apply(ctx context.Context, t *testing.T, file string, u *unstructured.Unstructured, dryRun bool) *unstructured.Unstructured {
	t.Helper()
	out, err := a.tryApply(ctx, u, dryRun)
	if err != nil {
		t.Errorf("%s: %s %s: %v", file, u.GetKind(), u.GetName(), err)
	}
	return out
}

func (a *applier) tryApply(ctx context.Context, u *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	gvk := u.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	var r dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		r = a.dyn.Resource(m.Resource).Namespace(u.GetNamespace())
	}
	opts := metav1.ApplyOptions{FieldManager: "throttlelab-test", Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return r.Apply(ctx, u.GetName(), u, opts)
}

// defaultServiceAccount makes the namespace's default service account, which
// a cluster's controller manager would (there is none here) and which the
// ServiceAccount admission looks up for every pod.
func (a *applier) defaultServiceAccount(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	if _, err := a.cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// checkQoS compares the QoS class the API server gave a server pod with the
// local backend's class of its config.
func checkQoS(t *testing.T, file string, e *experiment.Experiment, pod *unstructured.Unstructured) {
	t.Helper()
	if pod == nil {
		return
	}
	config := pod.GetLabels()[LabelConfig]
	for _, c := range e.Spec.Configs {
		if c.Name != config {
			continue
		}
		_, want, err := e.Settings(c)
		if err != nil {
			t.Fatal(err)
		}
		got, _, _ := unstructured.NestedString(pod.Object, "status", "qosClass")
		if got != string(want) {
			t.Errorf("%s: pod %s is %q to the API server, its config is %s", file, pod.GetName(), got, want)
		}
		return
	}
	t.Errorf("%s: pod %s has config label %q, which is no config", file, pod.GetName(), config)
}

// readDocuments reads a multi-document YAML file as unstructured objects.
func readDocuments(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if obj == nil {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)})
	}
	if len(out) == 0 {
		t.Fatalf("%s: no documents", path)
	}
	return out
}
