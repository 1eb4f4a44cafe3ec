package k8s

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/k8s/k8stest"
)

// TestGoldenOnAPIServer applies every document of every golden file to a
// real kube-apiserver with a server-side dry run, in namespaces whose Pod
// Security admission enforces the restricted profile: any field the API or
// the profile rejects is an error, and any warning (what Pod Security says
// about a Job's pods) fails the test too. The API server's QoS class of each
// server pod must be the local backend's class for its config.
func TestGoldenOnAPIServer(t *testing.T) {
	bin := k8stest.Binaries(t)
	started := time.Now()
	cp := k8stest.Start(t, bin)
	t.Logf("etcd and kube-apiserver ready in %s", time.Since(started).Round(100*time.Millisecond))
	w := &k8stest.Warnings{}
	a := k8stest.NewApplier(t, cp, w)
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
		docs := k8stest.ReadDocuments(t, f)
		if docs[0].GetKind() != "Namespace" {
			t.Fatalf("%s: the first document is a %s, not the Namespace", f, docs[0].GetKind())
		}
		// The namespace is created for real (after its own dry run): the
		// pods' admission reads its Pod Security labels.
		a.Apply(ctx, t, f, docs[0], true)
		a.Apply(ctx, t, f, docs[0], false)
		a.DefaultServiceAccount(ctx, t, docs[0].GetName())
		for _, d := range docs[1:] {
			out := a.Apply(ctx, t, f, d, true)
			applied++
			if d.GetKind() == "Pod" && d.GetLabels()["app.kubernetes.io/component"] == "server" {
				checkQoS(t, f, e, out)
				checkPodResources(t, f, d, out)
			}
		}
		for _, warning := range w.Take() {
			t.Errorf("%s: the API server warned: %s", f, warning)
		}
	}
	t.Logf("%d golden files, %d objects dry-run applied in %s", len(files), applied, time.Since(started).Round(100*time.Millisecond))

	// The rig sees what it must: a pod the restricted profile rejects fails,
	// and a Job whose pods it would reject warns.
	t.Run("rejects", func(t *testing.T) {
		docs := k8stest.ReadDocuments(t, filepath.Join("testdata", "golden", "example-limits.yaml"))
		for _, d := range docs[1:] {
			switch d.GetKind() {
			case "Pod":
				bad := d.DeepCopy()
				unstructured.RemoveNestedField(bad.Object, "spec", "securityContext", "seccompProfile")
				_, err := a.TryApply(ctx, bad, true)
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "restricted") {
					t.Errorf("a pod without a seccomp profile: %v, want forbidden by the restricted profile", err)
				}
			case "Job":
				bad := d.DeepCopy()
				containers, _, _ := unstructured.NestedSlice(bad.Object, "spec", "template", "spec", "containers")
				unstructured.SetNestedField(containers[0].(map[string]any), true, "securityContext", "allowPrivilegeEscalation")
				unstructured.SetNestedSlice(bad.Object, containers, "spec", "template", "spec", "containers")
				if _, err := a.TryApply(ctx, bad, true); err != nil {
					t.Errorf("a Job that allows privilege escalation: %v, want a warning only", err)
				}
				if got := w.Take(); len(got) == 0 || !strings.Contains(strings.Join(got, " "), "allowPrivilegeEscalation") {
					t.Errorf("a Job that allows privilege escalation: warnings %q", got)
				}
			}
		}
	})
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

// checkPodResources: a pod-level limit the API server kept (it drops
// spec.resources where the PodLevelResources feature is off), and the pod's
// request defaulted to its limit as the kubelet's pod group takes it.
func checkPodResources(t *testing.T, file string, sent, got *unstructured.Unstructured) {
	t.Helper()
	want, ok, _ := unstructured.NestedString(sent.Object, "spec", "resources", "limits", "cpu")
	if !ok || got == nil {
		return
	}
	limit, _, _ := unstructured.NestedString(got.Object, "spec", "resources", "limits", "cpu")
	request, _, _ := unstructured.NestedString(got.Object, "spec", "resources", "requests", "cpu")
	sentRequest, hasRequest, _ := unstructured.NestedString(sent.Object, "spec", "resources", "requests", "cpu")
	if !hasRequest {
		sentRequest = want
	}
	if limit != want || request != sentRequest {
		t.Errorf("%s: pod %s: the API server has pod-level cpu limit %q request %q, sent limit %q request %q", file, got.GetName(), limit, request, want, sentRequest)
	}
}

// TestPodLevelDroppedOnAPIServer: an API server without pod-level resources
// (the PodLevelResources gate off) takes the pod of a pod block and drops
// its spec.resources; the backend sees that and stops with
// ErrPodLevelDropped, naming the gate.
func TestPodLevelDroppedOnAPIServer(t *testing.T) {
	bin := k8stest.Binaries(t)
	cp := k8stest.Start(t, bin, "--feature-gates=PodLevelResources=false,PodLevelResourcesFixKubeletQOSClass=false,PodLevelResourcesFixDefaulting=false,InPlacePodLevelResourcesVerticalScaling=false")
	cs, err := kubernetes.NewForConfig(cp.RESTConfig(&k8stest.Warnings{}))
	if err != nil {
		t.Fatal(err)
	}
	e, err := experiment.LoadFile("../examples/pod-limit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Render(e, Options{Image: "throttlelab:dev", HostNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, m.Namespace, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k8stest.NewApplier(t, cp, &k8stest.Warnings{}).DefaultServiceAccount(ctx, t, m.Namespace.Name)
	sent := m.Configs[0].Pod
	made, err := cs.CoreV1().Pods(sent.Namespace).Create(ctx, sent.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	err = podLevelKept(sent, made)
	if !errors.Is(err, ErrPodLevelDropped) || !strings.Contains(err.Error(), "PodLevelResources") || strings.Contains(err.Error(), "\n") {
		t.Errorf("the pod without its spec.resources: %v, want one line naming the gate", err)
	}
	if err := podLevelKept(sent, sent); err != nil {
		t.Errorf("a pod that kept them: %v", err)
	}
}
