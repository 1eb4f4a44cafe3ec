package resize

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/throttlelab/throttlelab/fleet/fleettest"
	"github.com/throttlelab/throttlelab/k8s/k8stest"
)

// TestAdviseApplyBinary drives the built binary as a user would:
// advise --agent URL --apply against a real kube-apiserver (a fake agent
// serving advice from advise's model for a pod that exists there), first
// as a dry run, then with --yes, and reads the pod back.
func TestAdviseApplyBinary(t *testing.T) {
	bin := k8stest.Binaries(t)
	cp := k8stest.Start(t, bin)
	ctx := context.Background()
	cfg := cp.RESTConfig(&k8stest.Warnings{})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	createShop(t, cs)
	if _, err := cs.CoreV1().Pods("shop").Create(ctx, resizePod("checkout-7d9f8c6b5d-abcde", 250, 500), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	agent := fleettest.Agent(t, "node-a", []fleettest.Container{{Namespace: "shop", Pod: "checkout-7d9f8c6b5d-abcde", Container: "app",
		OwnerKind: "ReplicaSet", OwnerName: "checkout-7d9f8c6b5d", LimitMilli: 500, RequestMilli: 250,
		Demand: fleettest.Bursty(90, 0.1, 1.2, 100*time.Millisecond, 2)}})

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: "`+cp.URL+`", certificate-authority-data: "`+base64.StdEncoding.EncodeToString(cp.CAPEM)+`"}}]
users: [{name: test, user: {token: "`+cp.Token+`"}}]
contexts: [{name: test, context: {cluster: test, user: test}}]
current-context: test
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tl := filepath.Join(dir, "throttlelab")
	if out, err := exec.Command("go", "build", "-o", tl, "../../cmd/throttlelab").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(tl, args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	row := regexp.MustCompile(`(?m)^shop\s+checkout-7d9f8c6b5d-abcde\s+app\s+500m\s+(\S+)\s+(dry run: ok|applied)`)

	out, errs, code := run("advise", "--agent", agent.URL, "--apply", "--kubeconfig", kubeconfig)
	m := row.FindStringSubmatch(out)
	if code != 0 || m == nil || m[2] != "dry run: ok" || !strings.Contains(errs, "dry run (server-side): nothing was changed") {
		t.Fatalf("--apply: exit %d\n%s%s", code, out, errs)
	}
	if l, _ := limitOf(t, cs, "checkout-7d9f8c6b5d-abcde"); l != 500 {
		t.Errorf("after the dry run the limit is %dm, want 500m", l)
	}
	to := m[1]

	out, errs, code = run("advise", "--agent", agent.URL, "--apply", "--yes", "--kubeconfig", kubeconfig)
	m = row.FindStringSubmatch(out)
	if code != 0 || m == nil || m[2] != "applied" {
		t.Fatalf("--apply --yes: exit %d\n%s%s", code, out, errs)
	}
	p, err := cs.CoreV1().Pods("shop").Get(ctx, "checkout-7d9f8c6b5d-abcde", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Spec.Containers[0].Resources.Limits.Cpu().String(); got != to {
		t.Errorf("after --apply --yes the limit is %s, want the advised %s", got, to)
	}
	t.Logf("advised and applied: 500m -> %s", to)

	// The agent still says 500m: advice older than the resize is refused.
	out, errs, code = run("advise", "--agent", agent.URL, "--apply", "--yes", "--kubeconfig", kubeconfig)
	if code != 1 || !strings.Contains(out, "resized by someone else meanwhile: the limit is now "+to) || !strings.Contains(errs, "nothing was applied") {
		t.Errorf("stale advice: exit %d\n%s%s", code, out, errs)
	}
	os.Remove(tl)
}
