package resize

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/throttlelab/throttlelab/k8s/k8stest"
)

// levelPod is a pod with a pod-level CPU limit of podMilli over an app
// limited to appMilli and a proxy sidecar without a limit.
func levelPod(name string, podMilli, appMilli int64) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	cpu := func(m int64) resource.Quantity { return *resource.NewMilliQuantity(m, resource.DecimalSI) }
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
		Spec: corev1.PodSpec{
			Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: cpu(podMilli)}},
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: cpu(100)}, Limits: corev1.ResourceList{corev1.ResourceCPU: cpu(appMilli)}}}},
			InitContainers: []corev1.Container{{Name: "proxy", Image: "registry.example/proxy:1", RestartPolicy: &always}},
		},
	}
}

func podLevelRow(pod string, from, to int64) Row {
	return Row{Namespace: "shop", Pod: pod, FromLimitMilli: from, ToLimitMilli: to, Patch: PodLevelPatch(to)}
}

func podLevelOf(t *testing.T, cs kubernetes.Interface, pod string) int64 {
	t.Helper()
	p, err := cs.CoreV1().Pods("shop").Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return podLimitMilli(p)
}

// TestPodLevelResizeOnAPIServer resizes a pod's pod-level CPU limit in
// place through a real kube-apiserver v1.37 (pods/resize, spec.resources):
// a dry run changes nothing, the real run sets it; a pod-level limit under
// the containers' limits is refused in one line naming the sum; a pod
// without a pod-level limit is refused naming the gate. With the resize's
// feature gate off, the resize is not reported applied and the line names
// the gate and the version.
func TestPodLevelResizeOnAPIServer(t *testing.T) {
	bin := k8stest.Binaries(t)
	ctx := context.Background()
	cp := k8stest.Start(t, bin)
	cs, err := kubernetes.NewForConfig(cp.RESTConfig(&k8stest.Warnings{}))
	if err != nil {
		t.Fatal(err)
	}
	createShop(t, cs)
	for _, p := range []*corev1.Pod{levelPod("web-1", 2000, 300), resizePod("plain-1", 100, 500)} {
		if _, err := cs.CoreV1().Pods("shop").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := podLevelOf(t, cs, "web-1"); got != 2000 {
		t.Fatalf("the API server kept a pod-level limit of %dm, want 2000m (PodLevelResources on by default in 1.37)", got)
	}
	res, err := Resize(ctx, cp.RESTConfig(nil), []Row{podLevelRow("web-1", 2000, 800)}, false)
	if err != nil || res[0].Status != "dry run: ok" || podLevelOf(t, cs, "web-1") != 2000 {
		t.Fatalf("dry run: %v %+v, pod-level %dm", err, res, podLevelOf(t, cs, "web-1"))
	}
	res, err = Resize(ctx, cp.RESTConfig(nil), []Row{podLevelRow("web-1", 2000, 800)}, true)
	if err != nil || res[0].Status != "applied" || podLevelOf(t, cs, "web-1") != 800 {
		t.Fatalf("apply: %v %+v, pod-level %dm, want 800m", err, res, podLevelOf(t, cs, "web-1"))
	}
	// Under the app's own 300m: refused, one line.
	res, err = Resize(ctx, cp.RESTConfig(nil), []Row{podLevelRow("web-1", -1, 200)}, true)
	if err == nil || res[0].Status != "failed" || strings.Contains(res[0].Reason, "\n") ||
		!strings.Contains(res[0].Reason, "under its containers' limits summed (300m): give the pod at least 300m") || podLevelOf(t, cs, "web-1") != 800 {
		t.Errorf("pod-level 200m over an app at 300m: %v %+v", err, res)
	}
	// Stale advice and a pod without pod-level resources.
	res, _ = Resize(ctx, cp.RESTConfig(nil), []Row{podLevelRow("web-1", 2000, 900), podLevelRow("plain-1", -1, 900)}, true)
	if !strings.Contains(res[0].Reason, "the pod-level limit is now 800m") || !strings.Contains(res[1].Reason, "no pod-level CPU limit") || !strings.Contains(res[1].Reason, GatePodLevel) {
		t.Errorf("stale and none: %+v", res)
	}

	// The resize's gate off: the pod-level limit is not changed, and the
	// row says which gate and version.
	off := k8stest.Start(t, bin, "--feature-gates="+GatePodLevelResize+"=false")
	cs2, err := kubernetes.NewForConfig(off.RESTConfig(&k8stest.Warnings{}))
	if err != nil {
		t.Fatal(err)
	}
	createShop(t, cs2)
	if _, err := cs2.CoreV1().Pods("shop").Create(ctx, levelPod("web-1", 2000, 300), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err = Resize(ctx, off.RESTConfig(nil), []Row{podLevelRow("web-1", 2000, 800)}, true)
	if err == nil || res[0].Status == "applied" || !strings.Contains(res[0].Reason, GatePodLevelResize) || !strings.Contains(res[0].Reason, "1.36") ||
		strings.Contains(res[0].Reason, "\n") || podLevelOf(t, cs2, "web-1") != 2000 {
		t.Errorf("gate off: %v %+v, pod-level %dm", err, res, podLevelOf(t, cs2, "web-1"))
	}
	t.Logf("gate off: %s: %s", res[0].Status, res[0].Reason)
}
