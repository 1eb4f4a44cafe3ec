package resize

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/throttlelab/throttlelab/fleet/fleettest"
	"github.com/throttlelab/throttlelab/k8s/k8stest"
)

// writeDemand writes a container's demand CSV at 10 ms for 60 s: cores
// at each instant.
func writeDemand(t *testing.T, path string, cores func(time.Duration) float64) {
	t.Helper()
	var b strings.Builder
	b.WriteString("time_ns,usage_ns\n")
	var use time.Duration
	for i := 0; i <= 6000; i++ {
		at := time.Duration(i) * 10 * time.Millisecond
		if i > 0 {
			use += time.Duration(cores(at-10*time.Millisecond) * float64(10*time.Millisecond))
		}
		fmt.Fprintf(&b, "%d,%d\n", int64(at), int64(use))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestAdviseDemandApplyBinary drives the built binary: advise --demand
// DIR --apply on a Deployment's pod (its ReplicaSet web-HASH) with a
// pod-level limit, on a real kube-apiserver v1.37: a dry run changes
// nothing, --yes resizes the pod-level limit in place to the advised one,
// and a workload without a running pod is bad input (exit 2).
func TestAdviseDemandApplyBinary(t *testing.T) {
	bin := k8stest.Binaries(t)
	cp := k8stest.Start(t, bin)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(cp.RESTConfig(&k8stest.Warnings{}))
	if err != nil {
		t.Fatal(err)
	}
	createShop(t, cs)
	isController := true
	p := levelPod("web-6d5f7c9b8-x2k4p", 2000, 300)
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-6d5f7c9b8", UID: "5e2a0b7e-0000-4000-8000-000000000001", Controller: &isController}}
	// big's app has its own 1500m: a pod-level limit under it is refused.
	big := levelPod("big-7f8d9c6b5-q9w8e", 2000, 1500)
	big.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "big-7f8d9c6b5", UID: "5e2a0b7e-0000-4000-8000-000000000002", Controller: &isController}}
	for _, p := range []*corev1.Pod{p, big} {
		if _, err := cs.CoreV1().Pods("shop").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The app bursts to 1 core for 40 ms every 200 ms, the proxy for 40 ms
	// 100 ms later: one pod-level limit serves both for far less than
	// per-container limits.
	dir := t.TempDir()
	demand := filepath.Join(dir, "shop", "web")
	writeDemand(t, filepath.Join(demand, "app.csv"), func(at time.Duration) float64 {
		if at%(200*time.Millisecond) < 40*time.Millisecond {
			return 1
		}
		return 0.05
	})
	writeDemand(t, filepath.Join(demand, "proxy.csv"), func(at time.Duration) float64 {
		if (at+100*time.Millisecond)%(200*time.Millisecond) < 40*time.Millisecond {
			return 1
		}
		return 0.05
	})
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
	row := regexp.MustCompile(`(?m)^shop\s+web-6d5f7c9b8-x2k4p\s+\(pod-level\)\s+-\s+(\S+)\s+(dry run: ok|applied)`)
	out, errs, code := run("advise", "--demand", demand, "--apply", "--kubeconfig", kubeconfig)
	m := row.FindStringSubmatch(out)
	if code != 0 || m == nil || m[2] != "dry run: ok" || !strings.Contains(errs, "dry run (server-side): nothing was changed") || podLevelOf(t, cs, p.Name) != 2000 {
		t.Fatalf("--apply: exit %d\n%s%s", code, out, errs)
	}
	out, errs, code = run("advise", "--demand", demand, "--apply", "--yes", "--kubeconfig", kubeconfig)
	m = row.FindStringSubmatch(out)
	if code != 0 || m == nil || m[2] != "applied" {
		t.Fatalf("--apply --yes: exit %d\n%s%s", code, out, errs)
	}
	got, err := cs.CoreV1().Pods("shop").Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l := got.Spec.Resources.Limits.Cpu().String(); l != m[1] {
		t.Errorf("after --apply --yes the pod-level limit is %s, want the advised %s", l, m[1])
	}
	t.Logf("advised and applied at pod level: 2 -> %s", m[1])
	// A pod-level limit under the app's own limit: refused, one line on
	// stderr, exit 1 (nothing applied), the row saying why.
	bigDir := filepath.Join(dir, "shop", "big")
	if err := os.Rename(demand, bigDir); err != nil {
		t.Fatal(err)
	}
	out, errs, code = run("advise", "--demand", bigDir, "--apply", "--yes", "--kubeconfig", kubeconfig)
	if code != 1 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "nothing was applied") ||
		!strings.Contains(out, "failed  the API server refused a pod-level limit of "+m[1]+" under its containers' limits summed (1500m)") || podLevelOf(t, cs, big.Name) != 2000 {
		t.Errorf("pod-level under the app's 1500m: exit %d %q\n%s", code, errs, out)
	}
	// No running pod of the workload: bad input, one line.
	other := filepath.Join(dir, "shop", "api")
	if err := os.Rename(bigDir, other); err != nil {
		t.Fatal(err)
	}
	_, errs, code = run("advise", "--demand", other, "--apply", "--kubeconfig", kubeconfig)
	if code != 2 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "no running pod of workload api in namespace shop") {
		t.Errorf("no pod: exit %d %q", code, errs)
	}
	os.Remove(tl)
}

// TestAdviseAgentApplyPodLevelBinary: advise --agent URL --apply --yes
// resizes a pod's pod-level limit in place from the agent's advice for the
// pod's own group (kind pod, container ""), beside its containers' rows,
// on a real kube-apiserver v1.37.
func TestAdviseAgentApplyPodLevelBinary(t *testing.T) {
	bin := k8stest.Binaries(t)
	cp := k8stest.Start(t, bin)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(cp.RESTConfig(&k8stest.Warnings{}))
	if err != nil {
		t.Fatal(err)
	}
	createShop(t, cs)
	isController := true
	p := levelPod("web-6d5f7c9b8-x2k4p", 2000, 300)
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-6d5f7c9b8", UID: "5e2a0b7e-0000-4000-8000-000000000001", Controller: &isController}}
	if _, err := cs.CoreV1().Pods("shop").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	agent := fleettest.Agent(t, "node-a", []fleettest.Container{{Namespace: "shop", Pod: p.Name, PodLevel: true,
		OwnerKind: "ReplicaSet", OwnerName: "web-6d5f7c9b8", LimitMilli: 2000,
		Demand: fleettest.Bursty(90, 0.2, 1.2, 100*time.Millisecond, 2)}})
	dir := t.TempDir()
	kubeconfig := cp.Kubeconfig(t, "")
	tl := filepath.Join(dir, "throttlelab")
	if out, err := exec.Command("go", "build", "-o", tl, "../../cmd/throttlelab").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(tl, "advise", "--agent", agent.URL, "--apply", "--yes", "--kubeconfig", kubeconfig)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("advise --agent --apply --yes: %v\n%s%s", err, out.String(), errb.String())
	}
	m := regexp.MustCompile(`(?m)^shop\s+web-6d5f7c9b8-x2k4p\s+\(pod-level\)\s+2\s+(\S+)\s+applied`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no pod-level row applied:\n%s%s", out.String(), errb.String())
	}
	got, err := cs.CoreV1().Pods("shop").Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l := got.Spec.Resources.Limits.Cpu().String(); l != m[1] {
		t.Errorf("after --apply --yes the pod-level limit is %s, want the advised %s", l, m[1])
	}
	t.Logf("agent's pod advice applied at pod level: 2 -> %s", m[1])
	os.Remove(tl)
}
