package k8s

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/k8s/k8stest"
	"github.com/throttlelab/throttlelab/testenv"
)

// TestHelmChartOnAPIServer applies what the Helm chart renders (helm
// template, with the defaults and with the owner lookup off, the dashboard
// ConfigMap on) to a real kube-apiserver with a server-side dry run: the
// API takes every object, and the only warning is the baseline profile's
// about the hostPath volumes. The Prometheus Operator's objects are left
// out: this API server has no such CRDs (cmd/throttlelab's TestHelmChart
// holds them to the renderer's PodMonitor and the rules file).
func TestHelmChartOnAPIServer(t *testing.T) {
	helm := testenv.Helm(t)
	bin := k8stest.Binaries(t)
	cp := k8stest.Start(t, bin)
	w := &k8stest.Warnings{}
	a := k8stest.NewApplier(t, cp, w)
	ctx := context.Background()
	for i, set := range []string{"dashboard.enabled=true", "owners=false,namespace.name=agents-without-owners,nodeSelector.disk=ssd"} {
		out, err := exec.Command(helm, "template", "throttlelab-agent", filepath.Join("..", "deploy", "helm", "throttlelab-agent"), "--set", set).Output()
		if err != nil {
			t.Fatalf("helm template --set %s: %v", set, err)
		}
		path := filepath.Join(t.TempDir(), "chart.yaml")
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		docs := k8stest.ReadDocuments(t, path)
		if docs[0].GetKind() != "Namespace" {
			t.Fatalf("--set %s: the first document is a %s, not the Namespace", set, docs[0].GetKind())
		}
		a.Apply(ctx, t, path, docs[0], false)
		kinds := map[string]bool{}
		for _, d := range docs[1:] {
			a.Apply(ctx, t, path, d, true)
			kinds[d.GetKind()] = true
		}
		want := []string{"ServiceAccount", "DaemonSet", "Service"}
		if i == 0 {
			want = append(want, "ClusterRole", "ClusterRoleBinding", "ConfigMap")
		}
		for _, k := range want {
			if !kinds[k] {
				t.Errorf("--set %s: no %s dry-run applied (%v)", set, k, kinds)
			}
		}
		got := w.Take()
		if len(got) != 1 || !strings.Contains(got[0], "hostPath") {
			t.Errorf("--set %s: warnings %q: want the baseline warning about hostPath volumes only", set, got)
		}
	}
}
