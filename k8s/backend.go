package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/server"
)

// BackendOptions control the kubernetes backend.
type BackendOptions struct {
	// Kubeconfig, Context and Namespace are taken as kubectl takes them:
	// the file (default $KUBECONFIG, else ~/.kube/config, else the
	// in-cluster configuration), the context in it (default its current
	// one), and the namespace (default throttlelab-NAME, made if missing).
	Kubeconfig, Context, Namespace string
	// Config, if set, is used instead of a kubeconfig.
	Config *rest.Config
	// Image is the throttlelab image every pod runs (required).
	Image string
	// HostNetwork and HostPort: see Options (a test rig only).
	HostNetwork bool
	HostPort    int
	// ReadyTimeout bounds the wait for a run's pods (default 3 minutes).
	ReadyTimeout time.Duration
	// Poll is how often the backend looks at pods (default 500 ms).
	Poll time.Duration
	// Log receives progress lines and warnings.
	Log io.Writer
}

// Backend runs an experiment's runs on a Kubernetes cluster: for each run
// it applies the config's Service, server pods and neighbours, waits for
// them, runs the warm-up Job, opens every server's own measurement window
// (the server samples its container's cgroup every 10 ms), runs the load
// Job, closes the windows, copies the load's records out of the Job's pod,
// and deletes everything it made. It is a runner.Backend.
type Backend struct {
	opt       BackendOptions
	cfg       *rest.Config
	cs        kubernetes.Interface
	e         *experiment.Experiment
	m         *Manifests
	runID     string
	madeNS    bool
	kube      *record.KubeEnv
	cgroupVer string
}

// NewBackend returns the kubernetes backend.
func NewBackend(opt BackendOptions) *Backend {
	if opt.ReadyTimeout <= 0 {
		opt.ReadyTimeout = 3 * time.Minute
	}
	if opt.Poll <= 0 {
		opt.Poll = 500 * time.Millisecond
	}
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	return &Backend{opt: opt}
}

// Name is "kubernetes".
func (x *Backend) Name() string { return "kubernetes" }

// RESTConfig loads a client configuration as kubectl does: kubeconfig (""
// for $KUBECONFIG or ~/.kube/config, or in a pod its service account), and
// context ("" for the current one).
func RESTConfig(kubeconfig, kubecontext string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubecontext})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w (name a kubeconfig file, or set KUBECONFIG)", err)
	}
	return cfg, nil
}

// Prepare connects to the cluster, renders the experiment, removes what a
// killed run of it left (by the run label), makes the namespace if it is
// missing, and describes the cluster.
func (x *Backend) Prepare(ctx context.Context, e *experiment.Experiment) (record.Env, error) {
	x.e = e
	cfg := x.opt.Config
	if cfg == nil {
		var err error
		if cfg, err = RESTConfig(x.opt.Kubeconfig, x.opt.Context); err != nil {
			return record.Env{}, err
		}
	}
	x.cfg = rest.CopyConfig(cfg)
	// The API server's warnings (a Pod Security profile the pods would
	// break, say) once each, in the log, not through klog.
	x.cfg.WarningHandler, x.cfg.WarningHandlerWithContext = nil, &onceWarnings{w: x.opt.Log, seen: map[string]bool{}}
	cs, err := kubernetes.NewForConfig(x.cfg)
	if err != nil {
		return record.Env{}, err
	}
	x.cs = cs
	m, err := Render(e, Options{Namespace: x.opt.Namespace, Image: x.opt.Image, HostNetwork: x.opt.HostNetwork, HostPort: x.opt.HostPort})
	if err != nil {
		return record.Env{}, err
	}
	x.m, x.runID = m, m.Namespace.Labels[LabelRun]
	ns := m.Namespace.Name

	ver, err := cs.Discovery().ServerVersion()
	if err != nil {
		return record.Env{}, fmt.Errorf("reaching the cluster: %w", err)
	}
	if err := x.ensureNamespace(ctx); err != nil {
		return record.Env{}, err
	}
	n, err := DeleteRun(ctx, cs, ns, x.runID, x.opt.ReadyTimeout, x.opt.Poll)
	if err != nil {
		return record.Env{}, err
	}
	if n > 0 {
		fmt.Fprintf(x.opt.Log, "removed %d objects a killed run of %s left in namespace %s\n", n, x.runID, ns)
	}
	x.kube = &record.KubeEnv{ServerVersion: ver.GitVersion, Context: x.opt.Context, Namespace: ns, Image: x.opt.Image, HostNetwork: x.opt.HostNetwork}
	env := record.Env{Backend: "kubernetes", Started: time.Now().UTC(), Kubernetes: x.kube}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		// A namespaced Role cannot list nodes: the run goes on without.
		fmt.Fprintf(x.opt.Log, "throttlelab: cannot list the nodes (%v): env.json will not describe them\n", err)
	} else {
		var names, kernels []string
		for _, nd := range nodes.Items {
			i := nd.Status.NodeInfo
			kn := record.KubeNode{Name: nd.Name, Kernel: i.KernelVersion, OSImage: i.OSImage, ContainerRuntime: i.ContainerRuntimeVersion, Kubelet: i.KubeletVersion}
			if c, ok := nd.Status.Capacity[corev1.ResourceCPU]; ok {
				kn.CPUs = c.Value()
			}
			x.kube.Nodes = append(x.kube.Nodes, kn)
			names = append(names, nd.Name)
			if !slices.Contains(kernels, i.KernelVersion) {
				kernels = append(kernels, i.KernelVersion)
			}
		}
		env.Hostname, env.Kernel = strings.Join(names, ","), strings.Join(kernels, ",")
		if len(x.kube.Nodes) == 1 {
			env.Cores = int(x.kube.Nodes[0].CPUs)
		}
	}
	return env, nil
}

// ensureNamespace makes the run's namespace unless it exists; one that a
// killed run of the same experiment made (it carries the run label) is
// taken over, and deleted at the end like one made now.
func (x *Backend) ensureNamespace(ctx context.Context) error {
	nsc := x.cs.CoreV1().Namespaces()
	name := x.m.Namespace.Name
	deadline := time.Now().Add(x.opt.ReadyTimeout)
	for {
		got, err := nsc.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			if _, err := nsc.Create(ctx, x.m.Namespace.DeepCopy(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating namespace %s: %w (or use an existing namespace)", name, err)
			}
			x.madeNS = true
			return nil
		case apierrors.IsForbidden(err):
			// A namespaced Role cannot read namespaces: the namespace is
			// the user's, and must exist.
			return nil
		case err != nil:
			return fmt.Errorf("reading namespace %s: %w", name, err)
		case got.Status.Phase == corev1.NamespaceTerminating:
			if time.Now().After(deadline) {
				return fmt.Errorf("namespace %s is still being deleted after %s: wait, or use another namespace", name, x.opt.ReadyTimeout)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(x.opt.Poll):
			}
		default:
			x.madeNS = got.Labels[LabelRun] == x.runID
			return nil
		}
	}
}

// Close deletes what the runs left and the namespace if the backend made it.
func (x *Backend) Close() error {
	if x.cs == nil || x.m == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), x.opt.ReadyTimeout)
	defer cancel()
	_, err := DeleteRun(ctx, x.cs, x.m.Namespace.Name, x.runID, x.opt.ReadyTimeout, x.opt.Poll)
	if x.madeNS {
		if derr := x.cs.CoreV1().Namespaces().Delete(ctx, x.m.Namespace.Name, metav1.DeleteOptions{}); derr != nil && !apierrors.IsNotFound(derr) {
			err = errors.Join(err, fmt.Errorf("deleting namespace %s: %w", x.m.Namespace.Name, derr))
		}
	}
	return err
}

// Finish completes env.json with what the runs learned: the cgroup version
// the servers found, and every server pod's QoS class and quota.
func (x *Backend) Finish(dir string) error {
	env, err := record.ReadEnv(dir)
	if err != nil {
		return err
	}
	if env.Kubernetes == nil {
		env.Kubernetes = x.kube
	} else if x.kube != nil {
		env.Kubernetes.Pods = append(env.Kubernetes.Pods, x.kube.Pods...)
	}
	if x.cgroupVer != "" {
		// What the pods see; the node's own layout may differ (hybrid).
		env.CPUController, env.CgroupMode = x.cgroupVer, "in the pods: "+x.cgroupVer
	}
	return record.WriteJSON(filepath.Join(dir, record.EnvFile), env)
}

func (x *Backend) config(name string) (*ConfigObjects, error) {
	for i := range x.m.Configs {
		if x.m.Configs[i].Name == name {
			return &x.m.Configs[i], nil
		}
	}
	return nil, fmt.Errorf("config %s was not rendered", name)
}

// Run performs one run, writing its files into dir, and deletes the run's
// objects on every path (also when ctx is cancelled: Ctrl-C, SIGTERM).
func (x *Backend) Run(ctx context.Context, run experiment.Run, dir string) (rs *record.Run, err error) {
	co, err := x.config(run.Config.Name)
	if err != nil {
		return nil, err
	}
	li := slices.IndexFunc(x.e.Spec.Loads, func(l experiment.Load) bool { return l.Name == run.Load.Name })
	if li < 0 {
		return nil, fmt.Errorf("load %s was not rendered", run.Load.Name)
	}
	settings, qos, err := x.e.Settings(run.Config)
	if err != nil {
		return nil, err
	}
	rs = &record.Run{CPUStat: map[string]cgroup.CPUStat{}, Usage: map[string]record.UsageStats{}, Started: time.Now().UTC(), Settings: settings, QoS: qos}
	ns := x.m.Namespace.Name
	defer func() {
		// Deleted on every path; a cancelled run still cleans up.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), x.opt.ReadyTimeout)
		defer cancel()
		if _, derr := DeleteRun(cctx, x.cs, ns, x.runID, x.opt.ReadyTimeout, x.opt.Poll); derr != nil {
			err = errors.Join(err, derr)
		}
	}()

	if _, err := x.cs.CoreV1().Services(ns).Create(ctx, co.Service.DeepCopy(), metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating Service %s: %w", co.Service.Name, err)
	}
	var names []string
	for _, p := range append(append([]*corev1.Pod{}, co.Instances...), co.Neighbours...) {
		made, err := x.cs.CoreV1().Pods(ns).Create(ctx, p.DeepCopy(), metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("creating pod %s: %w", p.Name, err)
		}
		if err := podLevelKept(p, made); err != nil {
			return nil, err
		}
		names = append(names, p.Name)
	}
	fmt.Fprintf(x.opt.Log, "created %d pods and Service %s in namespace %s\n", len(names), co.Service.Name, ns)
	if err := WaitReady(ctx, x.cs, ns, names, x.opt.ReadyTimeout, x.opt.Poll, x.opt.Log); err != nil {
		return nil, err
	}
	for _, s := range co.Servers {
		rs.Instances = append(rs.Instances, s.Name)
	}

	if w := co.Warmups[li]; w != nil {
		fmt.Fprintf(x.opt.Log, "warm-up: Job %s\n", w.Name)
		if _, err := x.runJob(ctx, w, nil); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
		// Gone before the load's Job comes: on a small node the scheduler
		// may not count the finished warm-up's CPU request as free yet.
		if err := x.deleteJob(ctx, w.Name); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}

	// The pod group of a pod block: cAdvisor's first reading taken after
	// the warm-up, the load's window's start.
	var podBefore *podSample
	var podNode, podUID string
	if co.Pod != nil {
		if podNode, podUID, err = x.podIdentity(ctx, co.Pod.Name); err != nil {
			return nil, err
		}
		s, err := readPodGroup(ctx, x.cs, podNode, ns, co.Pod.Name, podUID, time.Now(), podGroupWait, x.opt.Poll)
		if err != nil {
			fmt.Fprintf(x.opt.Log, "throttlelab: the pod group of %s will not be recorded: %v\n", co.Pod.Name, err)
		} else {
			podBefore = &s
		}
	}
	// Each server measures itself from now on.
	for _, s := range co.Servers {
		if err := podHTTP(ctx, x.cfg, x.cs, ns, s.Pod, s.Port, "POST", "/cgroup/start", nil); err != nil {
			return nil, fmt.Errorf("starting the measurement of %s: %w", s.Name, err)
		}
	}
	job := co.Loads[li]
	fmt.Fprintf(x.opt.Log, "load: Job %s\n", job.Name)
	start := time.Now()
	_, loadErr := x.runJob(ctx, job, func(ctx context.Context, pod string) error {
		return x.collect(ctx, pod, dir)
	})
	rs.Seconds = time.Since(start).Seconds()
	if loadErr != nil {
		return nil, loadErr
	}
	windows := make([]*server.CgroupWindow, len(co.Servers))
	statuses := make([]server.CgroupStatus, len(co.Servers))
	for i, s := range co.Servers {
		var w server.CgroupWindow
		if err := podHTTP(context.WithoutCancel(ctx), x.cfg, x.cs, ns, s.Pod, s.Port, "POST", "/cgroup/stop", &w); err != nil {
			return nil, fmt.Errorf("ending the measurement of %s: %w", s.Name, err)
		}
		if w.Err != "" || w.After == nil || w.Before == nil {
			return nil, fmt.Errorf("the measurement of %s failed: %s", s.Name, w.Err)
		}
		windows[i] = &w
		if err := podHTTP(ctx, x.cfg, x.cs, ns, s.Pod, s.Port, "GET", "/cgroup", &statuses[i]); err != nil {
			return nil, err
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if podBefore != nil {
		after, err := readPodGroup(ctx, x.cs, podNode, ns, co.Pod.Name, podUID, start.Add(time.Duration(rs.Seconds*float64(time.Second))), podGroupWait, x.opt.Poll)
		if err != nil {
			fmt.Fprintf(x.opt.Log, "throttlelab: the pod group of %s will not be recorded: %v\n", co.Pod.Name, err)
		} else {
			g := podGroupOf(run.ID(), co.Pod.Name, podNode, *podBefore, after, rs.Seconds)
			if err := record.WriteJSON(filepath.Join(dir, record.PodGroupFile), g); err != nil {
				return nil, err
			}
			fmt.Fprintf(x.opt.Log, "pod group %s: quota %d/%d, throttled %d of %d periods, %.3f cores\n", co.Pod.Name, g.QuotaUsec, g.PeriodUsec, g.CPUStat.ThrottledPeriods, g.CPUStat.Periods, g.UsageCores)
		}
	}
	return rs, x.assemble(ctx, run, co, rs, windows, statuses, dir)
}

// runJob creates a Job and waits for its load container to end (fast
// failure on a pod that cannot start), then, if collect is set, lets it copy
// the results out of the still running pod. It returns the Job's pod.
func (x *Backend) runJob(ctx context.Context, job *batchv1.Job, collect func(context.Context, string) error) (string, error) {
	ns := x.m.Namespace.Name
	if _, err := x.cs.BatchV1().Jobs(ns).Create(ctx, job.DeepCopy(), metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("creating Job %s: %w", job.Name, err)
	}
	sel := metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job.Name}
	main := job.Spec.Template.Spec.Containers[0].Name
	ending := []string{}
	for _, c := range job.Spec.Template.Spec.Containers {
		if c.Name != ResultsContainer {
			ending = append(ending, c.Name)
		}
	}
	started := time.Now()
	tick := time.NewTicker(x.opt.Poll)
	defer tick.Stop()
	last := ""
	for {
		pods, err := x.cs.CoreV1().Pods(ns).List(ctx, sel)
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return "", fmt.Errorf("finding the pod of Job %s: %w", job.Name, err)
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if reason, msg, c := podProblem(p, ending...); reason != "" && !(reason == string(corev1.PodSucceeded)) {
				return p.Name, describePod(ctx, x.cs, ns, p.Name, c, reason, msg)
			}
			st := containerState(p, main)
			if st == nil || st.Terminated == nil {
				line := "Job " + job.Name + ": " + podState(p)
				if st != nil && st.Running != nil {
					line = "Job " + job.Name + ": running"
				}
				if line != last {
					fmt.Fprintln(x.opt.Log, line)
					last = line
				}
				continue
			}
			if t := st.Terminated; t.ExitCode != 0 {
				return p.Name, describePod(ctx, x.cs, ns, p.Name, main, "LoadFailed",
					fmt.Sprintf("container %s ended with exit code %d (%s)", main, t.ExitCode, t.Reason))
			}
			// Every container but the results holder has ended.
			if !allEnded(p, ending) {
				continue
			}
			if collect != nil {
				return p.Name, collect(ctx, p.Name)
			}
			return p.Name, nil
		}
		if len(pods.Items) == 0 && time.Since(started) > x.opt.ReadyTimeout {
			return "", fmt.Errorf("job %s made no pod in %s: kubectl describe job -n %s %s says why", job.Name, x.opt.ReadyTimeout, ns, job.Name)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-tick.C:
		}
	}
}

// deleteJob deletes a Job and its pods and waits until the pods are gone.
func (x *Backend) deleteJob(ctx context.Context, name string) error {
	ns := x.m.Namespace.Name
	bg := metav1.DeletePropagationBackground
	if err := x.cs.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Job %s: %w", name, err)
	}
	sel := metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + name}
	if err := x.cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the pods of Job %s: %w", name, err)
	}
	deadline := time.Now().Add(x.opt.ReadyTimeout)
	tick := time.NewTicker(x.opt.Poll)
	defer tick.Stop()
	for {
		l, err := x.cs.CoreV1().Pods(ns).List(ctx, sel)
		if err != nil {
			return err
		}
		if len(l.Items) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the pods of Job %s are still there after %s", name, x.opt.ReadyTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func containerState(p *corev1.Pod, name string) *corev1.ContainerState {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name {
			return &cs.State
		}
	}
	return nil
}

func allEnded(p *corev1.Pod, names []string) bool {
	for _, n := range names {
		if st := containerState(p, n); st == nil || st.Terminated == nil {
			return false
		}
	}
	return true
}

// collect copies /results out of a load Job's pod, through exec of
// throttlelab k8s pack in its results container, into dir/.load.
func (x *Backend) collect(ctx context.Context, pod, dir string) error {
	tarPath := filepath.Join(dir, ".results.tar")
	f, err := os.Create(tarPath)
	if err != nil {
		return err
	}
	defer os.Remove(tarPath)
	err = execIn(ctx, x.cfg, x.cs, x.m.Namespace.Name, pod, ResultsContainer, []string{ImageBinary, "k8s", "pack", ResultsDir}, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copying the results out of %s: %w", pod, err)
	}
	f, err = os.Open(tarPath)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = UnpackTo(f, filepath.Join(dir, ".load"))
	return err
}

// assemble writes the run's files as the local backend does (requests.csv,
// latency.hdr, usage.csv, throttled.csv, probe.csv) and fills rs.
func (x *Backend) assemble(ctx context.Context, run experiment.Run, co *ConfigObjects, rs *record.Run, windows []*server.CgroupWindow, statuses []server.CgroupStatus, dir string) error {
	load := filepath.Join(dir, ".load")
	defer os.RemoveAll(load)
	sum, err := readSummary(filepath.Join(load, record.SummaryFile))
	if err != nil {
		return err
	}
	rs.Summary = sum
	// Every request the load sent has its record: counted, not trusted.
	recs, err := record.ReadRequests(load)
	if err != nil {
		return fmt.Errorf("the load's records: %w", err)
	}
	if int64(len(recs)) != sum.Requests {
		return fmt.Errorf("the load sent %d requests but %d records came back from its pod", sum.Requests, len(recs))
	}
	moves := map[string]string{record.RequestsFile: record.RequestsFile, record.HistFile: record.HistFile, "probe/" + record.RequestsFile: record.ProbeFile}
	for from, to := range moves {
		if err := os.Rename(filepath.Join(load, from), filepath.Join(dir, to)); err != nil && !(from == "probe/"+record.RequestsFile && errors.Is(err, os.ErrNotExist)) {
			return fmt.Errorf("the load's %s: %w", from, err)
		}
	}
	if p, err := readSummary(filepath.Join(load, "probe", record.SummaryFile)); err == nil {
		rs.Probe = p
	}

	rw := record.NewRunWriter(dir, run.Index)
	stats := make([]cgroup.CPUStat, len(rs.Instances))
	sets := make([]cgroup.Settings, len(rs.Instances))
	for i, name := range rs.Instances {
		rw.AddInstance(name)
		stats[i] = windows[i].After.CPUStat.Sub(windows[i].Before.CPUStat)
		// The pod's own quota, period and burst, as its server read them:
		// the peak within a period is found where nr_periods moved.
		if l := statuses[i].Limits; l != nil {
			sets[i] = cgroup.Settings{QuotaUsec: l.QuotaUsec, PeriodUsec: l.PeriodUsec, BurstUsec: l.BurstUsec}
		}
	}
	samples := MergeWindows(windows, time.Time{}, time.Time{}, server.DefaultCgroupInterval)
	if err := rw.WriteSamples(samples); err != nil {
		return err
	}
	rw.Assemble(rs, stats, sets)
	for i, name := range rs.Instances {
		// The window also holds the load pod's start and the poll after its
		// end, both idle: the mean is over the load's own time, as locally.
		if st := rs.Usage[name]; sum.DurationSec > 0 && len(samples) > 1 {
			st.Mean = float64(samples[len(samples)-1].Usage[i]-samples[0].Usage[i]) / 1e9 / sum.DurationSec
			rs.Usage[name] = st
		}
	}

	// Where each server pod ran and what its cgroup really had.
	var pods []record.KubePod
	for i, name := range rs.Instances {
		p, err := x.cs.CoreV1().Pods(x.m.Namespace.Name).Get(ctx, co.Servers[i].Pod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		kp := record.KubePod{Run: run.ID(), Pod: p.Name, Node: p.Spec.NodeName, QoS: string(p.Status.QOSClass), CgroupVersion: statuses[i].Version, Group: statuses[i].Dir}
		if l := statuses[i].Limits; l != nil {
			kp.QuotaUsec, kp.PeriodUsec, kp.Shares, kp.Weight, kp.LimitCores = l.QuotaUsec, l.PeriodUsec, l.Shares, l.Weight, l.LimitCores
		}
		if kp.QoS != "" && kp.QoS != string(rs.QoS) {
			fmt.Fprintf(x.opt.Log, "throttlelab: pod %s is %s, the local backend's class is %s\n", name, kp.QoS, rs.QoS)
		}
		x.cgroupVer = kp.CgroupVersion
		pods = append(pods, kp)
	}
	x.kube.Pods = append(x.kube.Pods, pods...)
	return record.WriteJSON(filepath.Join(dir, record.PodsFile), pods)
}

// ErrPodLevelDropped is a pod-level limit the cluster did not keep.
var ErrPodLevelDropped = errors.New("pod-level resources dropped")

// podLevelKept checks that the API server kept a pod's pod-level resources:
// one without the feature drops the field silently, and the pod would run
// without the limit.
func podLevelKept(sent, made *corev1.Pod) error {
	if sent.Spec.Resources != nil && made.Spec.Resources == nil {
		return fmt.Errorf("%w: pod %s lost its spec.resources: the cluster does not have pod-level resources (Kubernetes 1.34+, feature gate PodLevelResources): use a newer cluster, or the local backend", ErrPodLevelDropped, sent.Name)
	}
	return nil
}

// podGroupWait bounds the wait for a cAdvisor reading of a pod group newer
// than a moment: the kubelet's cAdvisor refreshes every 10-15 s.
const podGroupWait = time.Minute

// podIdentity returns the node and UID of a pod (its cgroup is named after
// the UID).
func (x *Backend) podIdentity(ctx context.Context, pod string) (node, uid string, err error) {
	p, err := x.cs.CoreV1().Pods(x.m.Namespace.Name).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return "", "", fmt.Errorf("reading pod %s: %w", pod, err)
	}
	return p.Spec.NodeName, string(p.UID), nil
}

// onceWarnings writes each distinct API server warning once.
type onceWarnings struct {
	mu   sync.Mutex
	w    io.Writer
	seen map[string]bool
}

func (o *onceWarnings) HandleWarningHeaderWithContext(_ context.Context, code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.seen[text] {
		o.seen[text] = true
		fmt.Fprintf(o.w, "warning from the API server: %s\n", text)
	}
}

func readSummary(path string) (*loadgen.Totals, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the load's summary: %w", err)
	}
	var s loadgen.Totals
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}
