package k8s

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// PodError is a pod that will not become ready (or whose load failed): what
// its status says, its events, and the last lines of its log.
type PodError struct {
	Pod    string
	Reason string // ImagePullBackOff, CrashLoopBackOff, Unschedulable, Timeout, ...
	// Message is the status's own explanation.
	Message string
	Events  []string
	// Log is the last lines of the failing container's log, or why there
	// are none.
	Log string
}

func (e *PodError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pod %s: %s", e.Pod, e.Reason)
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if len(e.Events) > 0 {
		b.WriteString("\n  events:")
		for _, ev := range e.Events {
			b.WriteString("\n    " + ev)
		}
	}
	if e.Log != "" {
		b.WriteString("\n  last log lines:\n    " + strings.ReplaceAll(strings.TrimRight(e.Log, "\n"), "\n", "\n    "))
	}
	return b.String()
}

// Container waiting reasons that will not pass by themselves.
var fatalWaiting = []string{"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName",
	"CrashLoopBackOff", "CreateContainerConfigError", "CreateContainerError", "RunContainerError",
	"PreStartHookError", "PostStartHookError"}

// podProblem says why a pod will not become ready, if it will not: a fatal
// waiting reason, a container that ended (pods here never restart), a failed
// phase, or a pod the scheduler cannot place. container is the one at fault
// ("" if none). Containers named in ending may end (a Job's load).
func podProblem(p *corev1.Pod, ending ...string) (reason, msg, container string) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return "Unschedulable", c.Message, ""
		}
	}
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && slices.Contains(fatalWaiting, w.Reason) {
			return w.Reason, w.Message, cs.Name
		}
		if t := cs.State.Terminated; t != nil && !slices.Contains(ending, cs.Name) {
			return "ContainerExited", fmt.Sprintf("container %s ended with exit code %d (%s) %s", cs.Name, t.ExitCode, t.Reason, strings.TrimSpace(t.Message)), cs.Name
		}
	}
	if p.Status.Phase == corev1.PodFailed || (p.Status.Phase == corev1.PodSucceeded && len(ending) == 0) {
		return string(p.Status.Phase), p.Status.Message, ""
	}
	return "", "", ""
}

// podReady reports whether every container of the pod is ready (a pod
// without a readiness probe is ready when it runs).
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podState is a short word for a pod's progress, for the progress line.
func podState(p *corev1.Pod) string {
	if podReady(p) {
		return "ready"
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return w.Reason
		}
	}
	if p.Spec.NodeName == "" {
		return "Pending (not scheduled)"
	}
	return string(p.Status.Phase)
}

// describePod gathers a failing pod's events and the last lines of the
// container's log for a PodError.
func describePod(ctx context.Context, cs kubernetes.Interface, ns, pod, container, reason, msg string) *PodError {
	e := &PodError{Pod: pod, Reason: reason, Message: msg}
	sel := fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.name", pod), fields.OneTermEqualSelector("involvedObject.kind", "Pod"))
	if evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel.String()}); err == nil {
		items := evs.Items
		sort.SliceStable(items, func(i, j int) bool { return eventTime(items[i]).Before(eventTime(items[j])) })
		for _, ev := range items {
			e.Events = append(e.Events, fmt.Sprintf("%s %s: %s", ev.Type, ev.Reason, strings.TrimSpace(ev.Message)))
		}
	} else {
		e.Events = []string{"(events unreadable: " + err.Error() + ")"}
	}
	if p, err := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{}); err == nil && p.Spec.NodeName == "" {
		e.Log = "(no log: the pod was never scheduled)"
		return e
	}
	tail := int64(20)
	b, err := cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, TailLines: &tail}).DoRaw(ctx)
	switch {
	case err != nil:
		e.Log = "(no log: " + strings.TrimSpace(err.Error()) + ")"
	case len(b) == 0:
		e.Log = "(the log is empty)"
	default:
		e.Log = string(b)
	}
	return e
}

func eventTime(ev corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}

// WaitReady polls the named pods every poll until all are ready, writing a
// progress line to log when it changes. It fails fast with a *PodError (its
// events and last log lines) when a pod will not become ready, and with one
// of reason Timeout after timeout.
func WaitReady(ctx context.Context, cs kubernetes.Interface, ns string, names []string, timeout, poll time.Duration, log io.Writer) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	last := ""
	for {
		var waiting []string
		var worst *corev1.Pod
		for _, n := range names {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("reading pod %s: %w", n, err)
			}
			if reason, msg, c := podProblem(p); reason != "" {
				return describePod(ctx, cs, ns, n, c, reason, msg)
			}
			if !podReady(p) {
				waiting = append(waiting, n+" "+podState(p))
				if worst == nil {
					worst = p
				}
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		line := fmt.Sprintf("waiting for pods: %d of %d ready; %s", len(names)-len(waiting), len(names), strings.Join(waiting, ", "))
		if line != last {
			fmt.Fprintln(log, line)
			last = line
		}
		if time.Now().After(deadline) {
			container := ""
			if len(worst.Spec.Containers) > 0 {
				container = worst.Spec.Containers[0].Name
			}
			return describePod(ctx, cs, ns, worst.Name, container, "Timeout",
				fmt.Sprintf("not ready after %s (%s): give it longer to be ready, or see why in the events", timeout, podState(worst)))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// DeleteRun deletes every Job, Service and pod of namespace ns that carries
// the run label runID (what a run made, or a killed run left), and waits
// until they are gone, so the next run can reuse their names. It returns how
// many objects it deleted.
func DeleteRun(ctx context.Context, cs kubernetes.Interface, ns, runID string, timeout time.Duration, poll time.Duration) (int, error) {
	sel := metav1.ListOptions{LabelSelector: LabelRun + "=" + runID}
	bg := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &bg}
	n := 0
	jobs, err := cs.BatchV1().Jobs(ns).List(ctx, sel)
	if err != nil && !apierrors.IsNotFound(err) {
		return n, fmt.Errorf("listing the run's Jobs: %w", err)
	}
	if jobs != nil {
		for _, j := range jobs.Items {
			if err := cs.BatchV1().Jobs(ns).Delete(ctx, j.Name, del); err != nil && !apierrors.IsNotFound(err) {
				return n, fmt.Errorf("deleting Job %s: %w", j.Name, err)
			}
			n++
		}
	}
	svcs, err := cs.CoreV1().Services(ns).List(ctx, sel)
	if err != nil && !apierrors.IsNotFound(err) {
		return n, fmt.Errorf("listing the run's Services: %w", err)
	}
	if svcs != nil {
		for _, s := range svcs.Items {
			if err := cs.CoreV1().Services(ns).Delete(ctx, s.Name, del); err != nil && !apierrors.IsNotFound(err) {
				return n, fmt.Errorf("deleting Service %s: %w", s.Name, err)
			}
			n++
		}
	}
	// Pods last, the Jobs' too: the garbage collector may be slow or absent.
	pods, err := cs.CoreV1().Pods(ns).List(ctx, sel)
	if err != nil && !apierrors.IsNotFound(err) {
		return n, fmt.Errorf("listing the run's pods: %w", err)
	}
	if pods != nil {
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			if err := cs.CoreV1().Pods(ns).Delete(ctx, p.Name, del); err != nil && !apierrors.IsNotFound(err) {
				return n, fmt.Errorf("deleting pod %s: %w", p.Name, err)
			}
			n++
		}
	}
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		left := 0
		for _, list := range []func() (int, error){
			func() (int, error) {
				l, err := cs.CoreV1().Pods(ns).List(ctx, sel)
				return lenOr(l, err, func() int { return len(l.Items) })
			},
			func() (int, error) {
				l, err := cs.BatchV1().Jobs(ns).List(ctx, sel)
				return lenOr(l, err, func() int { return len(l.Items) })
			},
			func() (int, error) {
				l, err := cs.CoreV1().Services(ns).List(ctx, sel)
				return lenOr(l, err, func() int { return len(l.Items) })
			},
		} {
			k, err := list()
			if err != nil {
				return n, fmt.Errorf("waiting for the run's objects to go: %w", err)
			}
			left += k
		}
		if left == 0 {
			return n, nil
		}
		if time.Now().After(deadline) {
			return n, fmt.Errorf("%d objects labelled %s=%s still in namespace %s after %s: delete them with kubectl delete pods,jobs,services -n %s -l %s=%s",
				left, LabelRun, runID, ns, timeout, ns, LabelRun, runID)
		}
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-tick.C:
		}
	}
}

func lenOr[T any](l *T, err error, n func() int) (int, error) {
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return n(), nil
}
