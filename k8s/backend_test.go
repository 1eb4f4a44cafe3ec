package k8s

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/k8s/k8stest"
	"github.com/throttlelab/throttlelab/server"
)

func TestPodProblem(t *testing.T) {
	waiting := func(reason string) corev1.PodStatus {
		return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "server", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "because"}}}}}
	}
	exited := corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
		{Name: "load", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}},
		{Name: "results", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	tests := []struct {
		name      string
		status    corev1.PodStatus
		ending    []string
		reason    string
		container string
	}{
		{"image pull back-off", waiting("ImagePullBackOff"), nil, "ImagePullBackOff", "server"},
		{"crash loop", waiting("CrashLoopBackOff"), nil, "CrashLoopBackOff", "server"},
		{"image never pulled", waiting("ErrImageNeverPull"), nil, "ErrImageNeverPull", "server"},
		{"still creating", waiting("ContainerCreating"), nil, "", ""},
		{"unschedulable", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes are available"}}}, nil, "Unschedulable", ""},
		{"a server that ended", exited, nil, "ContainerExited", "load"},
		{"a load that ended, as it may", exited, []string{"load"}, "", ""},
		{"failed", corev1.PodStatus{Phase: corev1.PodFailed, Message: "evicted"}, nil, "Failed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, _, c := podProblem(&corev1.Pod{Status: tt.status}, tt.ending...)
			if reason != tt.reason || c != tt.container {
				t.Errorf("problem = %q in %q, want %q in %q", reason, c, tt.reason, tt.container)
			}
		})
	}
}

func TestMergeWindows(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := int64(time.Millisecond)
	// a samples every 10 ms from t0, using half a core; b starts 5 ms later,
	// samples at odd times, using a full core, and is throttled at 12 ms.
	s := func(t, u int64, thr uint64) server.CgroupSample {
		// nr_periods moves with nr_throttled here (3 periods a throttle).
		return server.CgroupSample{TNs: t, UsageNs: u, Throttled: thr, Periods: 3*thr + 1}
	}
	a := &server.CgroupWindow{Started: t0, Samples: []server.CgroupSample{s(0, 0, 0), s(10*ms, 5*ms, 0), s(20*ms, 10*ms, 1), s(30*ms, 15*ms, 1)}}
	b := &server.CgroupWindow{Started: t0.Add(5 * time.Millisecond), Samples: []server.CgroupSample{s(0, 100*ms, 0), s(7*ms, 107*ms, 2), s(21*ms, 121*ms, 3)}}
	got := MergeWindows([]*server.CgroupWindow{a, b}, time.Time{}, time.Time{}, 10*time.Millisecond)
	// The overlap runs from 5 ms (b's start) to 26 ms (b's end), in a's time.
	if len(got) != 3 {
		t.Fatalf("%d samples, want 3: %+v", len(got), got)
	}
	want := []struct {
		at          time.Duration
		ua, ub      time.Duration
		thrA, thrB  uint64
		atDescribed string
	}{
		{0, 2500 * time.Microsecond, 100 * time.Millisecond, 0, 0, "5 ms"},
		{10 * time.Millisecond, 7500 * time.Microsecond, 110 * time.Millisecond, 0, 2, "15 ms"},
		{20 * time.Millisecond, 12500 * time.Microsecond, 120 * time.Millisecond, 1, 2, "25 ms"},
	}
	for i, w := range want {
		g := got[i]
		if g.At != w.at || g.Usage[0] != w.ua || g.Usage[1] != w.ub || g.Throttled[0] != w.thrA || g.Throttled[1] != w.thrB ||
			len(g.Periods) != 2 || g.Periods[0] != 3*w.thrA+1 || g.Periods[1] != 3*w.thrB+1 {
			t.Errorf("at %s: got %+v, want at %s usage %s %s throttled %d %d", w.atDescribed, g, w.at, w.ua, w.ub, w.thrA, w.thrB)
		}
	}
	if MergeWindows([]*server.CgroupWindow{a, {Started: t0.Add(time.Second), Samples: b.Samples}}, time.Time{}, time.Time{}, 10*time.Millisecond) != nil {
		t.Error("windows that do not overlap merged")
	}
}

func TestPodErrorSaysWhy(t *testing.T) {
	e := &PodError{Pod: "limited-0", Reason: "ImagePullBackOff", Message: "Back-off pulling image \"x\"",
		Events: []string{"Warning Failed: Failed to pull image"}, Log: "line 1\nline 2\n"}
	got := e.Error()
	for _, want := range []string{"pod limited-0: ImagePullBackOff: Back-off", "events:\n    Warning Failed", "last log lines:\n    line 1\n    line 2"} {
		if !strings.Contains(got, want) {
			t.Errorf("error %q lacks %q", got, want)
		}
	}
}

// TestBackendOnAPIServer drives the backend against a real kube-apiserver
// (no kubelet, no scheduler: the test plays the kubelet's part by writing
// pod status and events): leftovers of a killed run are removed by label,
// the objects of a run are created, a pod that cannot pull its image fails
// the run at once with its events, and everything is deleted after.
func TestBackendOnAPIServer(t *testing.T) {
	bin := k8stest.Binaries(t)
	cp := k8stest.Start(t, bin)
	cfg := cp.RESTConfig(&k8stest.Warnings{})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := experiment.LoadFile("../examples/limits.yaml")
	if err != nil {
		t.Fatal(err)
	}
	run := e.Runs()[0]
	// A node, so env.json has something to describe.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	node, err = cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status = corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KernelVersion: "6.1.0-test", ContainerRuntimeVersion: "containerd://1.6.20", KubeletVersion: "v1.37.0"},
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("leftovers removed by label", func(t *testing.T) {
		ns := "tl-leftovers"
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defaultSA(t, cs, ns)
		old := map[string]string{LabelRun: "limits"}
		mk := func(name string, labels map[string]string) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
			if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		mk("limited-0", old)
		mk("someone-elses", map[string]string{LabelRun: "other"})
		if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc-limited", Labels: old},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "load-limited-load0", Labels: old}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}
		if _, err := cs.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var log strings.Builder
		b := NewBackend(BackendOptions{Config: cfg, Namespace: ns, Image: "throttlelab:test", Poll: 20 * time.Millisecond, ReadyTimeout: 30 * time.Second, Log: &log})
		env, err := b.Prepare(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(log.String(), "removed 3 objects") {
			t.Errorf("log %q does not say what was removed", log.String())
		}
		pods, _ := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if len(pods.Items) != 1 || pods.Items[0].Name != "someone-elses" {
			t.Errorf("pods left: %v, want only someone-elses", names(pods.Items))
		}
		if env.Kubernetes == nil || env.Kubernetes.ServerVersion != k8stest.KubeVersion || env.Kernel != "6.1.0-test" || env.Cores != 2 || env.Hostname != "node-a" ||
			len(env.Kubernetes.Nodes) != 1 || env.Kubernetes.Nodes[0].ContainerRuntime != "containerd://1.6.20" {
			t.Errorf("env = %+v, kubernetes %+v", env, env.Kubernetes)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		// The namespace was the user's: kept.
		if got, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil {
			t.Errorf("the user's namespace: %v, deleting %v", err, got.DeletionTimestamp)
		}
	})

	t.Run("image pull failure reported with events, then cleaned up", func(t *testing.T) {
		ns := "tl-pullfail"
		b := NewBackend(BackendOptions{Config: cfg, Namespace: ns, Image: "registry.invalid/throttlelab:none", Poll: 20 * time.Millisecond, ReadyTimeout: 60 * time.Second})
		if _, err := b.Prepare(ctx, e); err != nil {
			t.Fatal(err)
		}
		defaultSA(t, cs, ns)
		errc := make(chan error, 1)
		go func() { _, err := b.Run(ctx, run, t.TempDir()); errc <- err }()

		// The run's objects appear, labelled; then the kubelet's part.
		sel := metav1.ListOptions{LabelSelector: LabelRun + "=limits"}
		var pods *corev1.PodList
		waitUntil(t, func() bool {
			pods, err = cs.CoreV1().Pods(ns).List(ctx, sel)
			return err == nil && len(pods.Items) == run.Config.Instances
		})
		svcs, _ := cs.CoreV1().Services(ns).List(ctx, sel)
		if len(svcs.Items) != 1 || svcs.Items[0].Name != "svc-"+run.Config.Name {
			t.Errorf("services %v", svcs.Items)
		}
		for _, p := range pods.Items {
			if !strings.HasPrefix(p.Name, run.Config.Name+"-") || p.Labels[LabelConfig] != run.Config.Name {
				t.Errorf("pod %s labels %v", p.Name, p.Labels)
			}
		}
		victim := pods.Items[0]
		// The event first: the backend reads the events as soon as it sees the
		// status, and must find this one.
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: victim.Name + ".pull", Namespace: ns},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: victim.Name, Namespace: ns, UID: victim.UID},
			Type:           "Warning", Reason: "Failed", Message: "Failed to pull image: dial tcp: lookup registry.invalid: no such host",
			LastTimestamp: metav1.Now(), Source: corev1.EventSource{Component: "kubelet"}}
		if _, err := cs.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}

		victim.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "server", Image: "registry.invalid/throttlelab:none",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image \"registry.invalid/throttlelab:none\""}}}}}
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, &victim, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		var runErr error
		select {
		case runErr = <-errc:
		case <-time.After(60 * time.Second):
			t.Fatal("the run did not fail on ImagePullBackOff")
		}
		var pe *PodError
		if !errors.As(runErr, &pe) || pe.Reason != "ImagePullBackOff" || pe.Pod != victim.Name {
			t.Fatalf("run error = %v, want a PodError for %s, ImagePullBackOff", runErr, victim.Name)
		}
		if !strings.Contains(runErr.Error(), "no such host") || !strings.Contains(runErr.Error(), "last log lines:\n    (no log: the pod was never scheduled)") {
			t.Errorf("the error lacks the events or the log: %v", runErr)
		}
		for what, n := range map[string]int{"pods": countPods(t, cs, ns, sel), "services": countSvcs(t, cs, ns, sel)} {
			if n != 0 {
				t.Errorf("%d %s left after the failed run", n, what)
			}
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		// The backend made the namespace: deleted (without a namespace
		// controller it stays Terminating).
		got, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err == nil && got.DeletionTimestamp == nil {
			t.Errorf("namespace %s not deleted", ns)
		} else if err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})

	t.Run("timeout names the pod", func(t *testing.T) {
		b := NewBackend(BackendOptions{Config: cfg, Namespace: "tl-timeout", Image: "throttlelab:test", Poll: 20 * time.Millisecond, ReadyTimeout: time.Second})
		if _, err := b.Prepare(ctx, e); err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		defaultSA(t, cs, "tl-timeout")
		_, err := b.Run(ctx, run, t.TempDir())
		var pe *PodError
		if !errors.As(err, &pe) || pe.Reason != "Timeout" || !strings.Contains(pe.Message, "not scheduled") {
			t.Fatalf("run error = %v, want a timeout naming an unscheduled pod", err)
		}
		if n := countPods(t, cs, "tl-timeout", metav1.ListOptions{LabelSelector: LabelRun + "=limits"}); n != 0 {
			t.Errorf("%d pods left", n)
		}
	})
}

// defaultSA makes a namespace's default service account, which the
// controller manager (absent here) makes on a cluster.
func defaultSA(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(context.Background(), sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 30 s")
		}
		<-tick.C
	}
}

func names(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func countPods(t *testing.T, cs kubernetes.Interface, ns string, sel metav1.ListOptions) int {
	l, err := cs.CoreV1().Pods(ns).List(context.Background(), sel)
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

func countSvcs(t *testing.T, cs kubernetes.Interface, ns string, sel metav1.ListOptions) int {
	l, err := cs.CoreV1().Services(ns).List(context.Background(), sel)
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}
