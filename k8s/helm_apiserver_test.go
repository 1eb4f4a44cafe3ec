package k8s

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/throttlelab/throttlelab/k8s/k8stest"
	"github.com/throttlelab/throttlelab/testenv"
)

// TestHelmChartOnAPIServer creates what the Helm chart renders for one
// release (helm template, the namespace made, the dashboard ConfigMap on)
// on a real kube-apiserver, then creates, as a server-side dry run, two
// more releases: one of the same name in another namespace (owner lookup
// and all) and one of another name there (the owner lookup off). The API
// takes every object, none of the later releases' objects collides with
// the first's (a create of an existing name would fail), and the only
// warning is the baseline profile's about the hostPath volumes. The
// Prometheus Operator's objects are left out: this API server has no such
// CRDs (cmd/throttlelab's TestHelmChart holds them to the renderer).
func TestHelmChartOnAPIServer(t *testing.T) {
	helm := testenv.Helm(t)
	bin := k8stest.Binaries(t)
	cp := k8stest.Start(t, bin)
	w := &k8stest.Warnings{}
	a := k8stest.NewApplier(t, cp, w)
	ctx := context.Background()
	for i, r := range []struct{ release, ns, set string }{
		{"throttlelab-agent", "team-a", "namespace.create=true,dashboard.enabled=true"},
		{"throttlelab-agent", "team-b", "namespace.create=true,dashboard.enabled=true"},
		{"nodes", "team-b", "owners=false,nodeSelector.disk=ssd,state.volume=emptyDir"},
	} {
		out, err := exec.Command(helm, "template", r.release, filepath.Join("..", "deploy", "helm", "throttlelab-agent"), "-n", r.ns, "--set", r.set).Output()
		if err != nil {
			t.Fatalf("helm template %s -n %s --set %s: %v", r.release, r.ns, r.set, err)
		}
		path := filepath.Join(t.TempDir(), "chart.yaml")
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		docs := k8stest.ReadDocuments(t, path)
		kinds := map[string]bool{}
		for _, d := range docs {
			if d.GetNamespace() != "" && d.GetNamespace() != r.ns {
				t.Errorf("%s -n %s: %s %s is in namespace %s", r.release, r.ns, d.GetKind(), d.GetName(), d.GetNamespace())
			}
			kinds[d.GetKind()] = true
			if d.GetKind() == "Namespace" {
				// Made for real: the pods' admission reads its labels.
				if d.GetName() != r.ns {
					t.Errorf("%s -n %s: the chart makes namespace %s", r.release, r.ns, d.GetName())
				}
				if _, err := a.TryCreate(ctx, d, false); err != nil {
					t.Fatalf("%s -n %s: Namespace: %v", r.release, r.ns, err)
				}
				continue
			}
			// The first release for real, the others as dry runs.
			if _, err := a.TryCreate(ctx, d, i > 0); apierrors.IsAlreadyExists(err) {
				t.Errorf("%s -n %s: %s %s collides with an earlier release's: %v", r.release, r.ns, d.GetKind(), d.GetName(), err)
			} else if err != nil {
				t.Errorf("%s -n %s: %s %s: %v", r.release, r.ns, d.GetKind(), d.GetName(), err)
			}
		}
		want := []string{"ServiceAccount", "DaemonSet", "Service"}
		if r.release == "throttlelab-agent" {
			want = append(want, "Namespace", "ClusterRole", "ClusterRoleBinding", "ConfigMap")
		}
		for _, k := range want {
			if !kinds[k] {
				t.Errorf("%s -n %s: no %s created (%v)", r.release, r.ns, k, kinds)
			}
		}
		got := w.Take()
		if len(got) != 1 || !strings.Contains(got[0], "hostPath") {
			t.Errorf("%s -n %s: warnings %q: want the baseline warning about hostPath volumes only", r.release, r.ns, got)
		}
	}

	// helm install's NOTES name the next commands.
	cmd := exec.Command(helm, "install", "r1", filepath.Join("..", "deploy", "helm", "throttlelab-agent"), "-n", "team-c", "--dry-run=client")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.Kubeconfig(t, ""), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "kubectl throttlelab advise deploy/NAME -n NAMESPACE") ||
		!strings.Contains(string(out), "kubectl -n team-c rollout status daemonset/r1-throttlelab-agent") {
		t.Errorf("helm install --dry-run: %v: the NOTES do not name the next commands:\n%s", err, out)
	}
}
