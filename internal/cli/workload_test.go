package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/k8s/k8stest"
)

// TestWorkloadExitCodes runs advise KIND/NAME and top -A against a real
// kube-apiserver through a kubeconfig, as kubectl throttlelab would: a
// workload that does not exist is bad input (2), a node without an agent
// and a cluster without agents a source that could not be read (3), each
// said in one line naming the workload or node.
func TestWorkloadExitCodes(t *testing.T) {
	cp := k8stest.Start(t, k8stest.Binaries(t))
	a := k8stest.NewApplier(t, cp, &k8stest.Warnings{})
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "objects.yaml")
	objects := `apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Pod
metadata: {name: debug, namespace: shop}
spec:
  nodeName: node-1
  containers: [{name: app, image: "app:1"}]
`
	if err := os.WriteFile(path, []byte(objects), 0o644); err != nil {
		t.Fatal(err)
	}
	docs := k8stest.ReadDocuments(t, path)
	a.Apply(ctx, t, path, docs[0], false)
	a.DefaultServiceAccount(ctx, t, "shop")
	a.Apply(ctx, t, path, docs[1], false)
	kc := cp.Kubeconfig(t, "shop")
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"advise", "deploy/nope", "--kubeconfig", kc}, 2, "deployments/nope in namespace shop: not found"},
		{[]string{"advise", "deploy/nope", "-n", "other", "--kubeconfig", kc}, 2, "in namespace other"},
		{[]string{"advise", "deploy/web", "-A", "--kubeconfig", kc}, 2, "not every namespace"},
		{[]string{"advise", "pod/debug", "--kubeconfig", kc}, 3, "node node-1 (pod shop/debug of shop/pod/debug) has no throttlelab agent"},
		{[]string{"advise", "-l", "app=nothing", "--kubeconfig", kc}, 2, `no pods match "app=nothing" in namespace shop`},
		{[]string{"top", "-A", "--kubeconfig", kc}, 3, "no throttlelab agent on any node"},
		{[]string{"top", "-A", "--sort", "usage", "--kubeconfig", kc}, 2, "--sort"},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(c.args, &stdout, &stderr)
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if code != c.code || len(lines) != 1 || !strings.Contains(lines[0], c.says) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and one line saying %q", strings.Join(c.args[:len(c.args)-2], " "), code, stderr.String(), c.code, c.says)
		}
	}
}
