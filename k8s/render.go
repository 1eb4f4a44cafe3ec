package k8s

import (
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/k8s/manifest"
	"github.com/throttlelab/throttlelab/loadgen"
)

// Labels and ports the rendered objects carry.
const (
	// LabelRun is on every object a run makes: one selector deletes them all.
	LabelRun = "throttlelab/run"
	// LabelConfig names the config a pod, Service or Job belongs to.
	LabelConfig = "throttlelab/config"
	// LabelNeighbour and LabelLoad name a neighbour pod's neighbour and a
	// Job's load, as the spec names them.
	LabelNeighbour = "throttlelab/neighbour"
	LabelLoad      = "throttlelab/load"
	// Port is where every server listens, in its pod.
	Port = 8080
)

// Options control how an experiment is rendered.
type Options struct {
	// Namespace holds every object (default: throttlelab-NAME, NAME the
	// experiment's).
	Namespace string
	// Image is the throttlelab image every container runs (required).
	Image string
	// RunID is the value of the run label on every object (default: the
	// experiment's name).
	RunID string
	// BurnIterationsPerMs, if set, is every server's --burn-calibration, so
	// that cpu=5ms means the same work on every node; 0 lets each server
	// measure its own at start-up (about 100 ms of CPU, timed with the
	// thread's CPU clock, so a limit does not distort it).
	BurnIterationsPerMs float64
	// HostNetwork is for a test rig without a network plugin (make e2e-k8s):
	// every pod on the node's network, servers on loopback at distinct ports
	// from HostPort up (default 18080), the load sent to 127.0.0.1, pods
	// tolerating a node that is not ready, and the namespace enforcing the
	// privileged profile (restricted forbids the host's network). Never for
	// a shared cluster.
	HostNetwork bool
	HostPort    int
}

// DefaultHostPort is the first server port with Options.HostNetwork.
const DefaultHostPort = 18080

// Manifests are the objects that run an experiment on a cluster.
type Manifests struct {
	// Experiment is the name of the rendered experiment.
	Experiment string
	Namespace  *corev1.Namespace
	Configs    []ConfigObjects
}

// ConfigObjects are one config's objects. A run of the config needs its
// Service, instances and neighbours, then the Job of the run's load.
type ConfigObjects struct {
	Name string
	// Service finds the instances: a ClusterIP Service for the random
	// balancer (kube-proxy picks a pod per connection), a headless one
	// giving every pod a DNS name for the client-side balancers.
	Service *corev1.Service
	// Instances are the server pods, NAME-0, NAME-1, ... as in the local
	// backend: bare pods, so each instance keeps its name (it is the
	// X-Instance the records carry) and a crash ends the run rather than
	// being replaced behind its back. A config with a pod block has one
	// pod, named NAME, whose containers are the instances (see Servers).
	Instances []*corev1.Pod
	// Servers are the instances, one per container, in order; Pod is set
	// for a config with a pod block (the pod holding them all and its
	// pod-level limit).
	Servers []Server
	Pod     *corev1.Pod
	// Neighbours are the config's neighbours (the spec's and its own, probes
	// aside: a probe runs in the load Job), one pod each, named CONFIG-NAME.
	Neighbours []*corev1.Pod
	// Loads holds one Job per load of the spec, named load-CONFIG-LOAD.
	Loads []*batchv1.Job
	// Warmups holds, per load, the Job of its warm-up (warmup-CONFIG-LOAD),
	// run to its end before the load's Job so that what the servers measure
	// of themselves covers the load alone; nil without a warm-up.
	Warmups []*batchv1.Job
}

// Server is one instance of a config: the pod and container it runs in and
// the port it listens on (Port in a pod of its own; with HostNetwork, or
// beside other instances in one pod, each its own).
type Server struct {
	Name, Pod, Container string
	Port                 int
}

// ServerContainer returns an instance's pod and container (nil, nil if the
// config has none such).
func (co *ConfigObjects) ServerContainer(s Server) (*corev1.Pod, *corev1.Container) {
	for _, p := range co.Instances {
		for i := range p.Spec.Containers {
			if p.Name == s.Pod && p.Spec.Containers[i].Name == s.Container {
				return p, &p.Spec.Containers[i]
			}
		}
	}
	return nil, nil
}

// Objects returns every object in the order to apply them.
func (m *Manifests) Objects() []runtime.Object {
	out := []runtime.Object{m.Namespace}
	for _, c := range m.Configs {
		out = append(out, c.Service)
		for _, p := range c.Instances {
			out = append(out, p)
		}
		for _, p := range c.Neighbours {
			out = append(out, p)
		}
		for i, j := range c.Loads {
			if w := c.Warmups[i]; w != nil {
				out = append(out, w)
			}
			out = append(out, j)
		}
	}
	return out
}

// Render turns a resolved experiment (experiment.LoadFile, a preset's Spec or
// Quick) into its Kubernetes objects. Bad input is a *SpecError or an
// *OptionError, returned before anything is built.
func Render(e *experiment.Experiment, opt Options) (*Manifests, error) {
	if err := manifest.CheckImage(opt.Image); err != nil {
		return nil, err
	}
	if err := checkSpec(e); err != nil {
		return nil, err
	}
	if opt.RunID == "" {
		opt.RunID = e.Metadata.Name
	}
	if errs := validation.IsValidLabelValue(opt.RunID); len(errs) > 0 {
		return nil, &manifest.OptionError{Option: "run ID", Msg: fmt.Sprintf("%q cannot be a label value: use at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", opt.RunID)}
	}
	ns := opt.Namespace
	if ns == "" {
		ns = "throttlelab-" + e.Metadata.Name
		if len(ns) > validation.DNS1123LabelMaxLength {
			return nil, &SpecError{"metadata.name", fmt.Sprintf("the namespace %s would be %d characters, Kubernetes takes %d: give a namespace", ns, len(ns), validation.DNS1123LabelMaxLength)}
		}
	} else if len(validation.IsDNS1123Label(ns)) > 0 {
		return nil, &manifest.OptionError{Option: "namespace", Msg: fmt.Sprintf("%q is not a DNS label: use at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit", ns)}
	}
	if opt.HostNetwork && opt.HostPort == 0 {
		opt.HostPort = DefaultHostPort
	}
	b := &builder{e: e, opt: opt, ns: ns, taken: map[string]string{}, nextPort: opt.HostPort}
	m := &Manifests{Experiment: e.Metadata.Name, Namespace: b.namespace()}
	for i, c := range e.Spec.Configs {
		co, err := b.config(fmt.Sprintf("spec.configs[%d]", i), c)
		if err != nil {
			return nil, err
		}
		m.Configs = append(m.Configs, co)
	}
	return m, nil
}

type builder struct {
	e     *experiment.Experiment
	opt   Options
	ns    string
	taken map[string]string // object name -> the spec field that made it
	// nextPort is the next server's port with HostNetwork.
	nextPort int
}

// port is the next server's port: Port in a pod of its own, distinct ports
// on the host's network.
func (b *builder) port() int {
	if !b.opt.HostNetwork {
		return Port
	}
	b.nextPort++
	return b.nextPort - 1
}

// name checks a derived object name: a DNS label, used once.
func (b *builder) name(field, name string) (string, error) {
	if len(name) > validation.DNS1123LabelMaxLength {
		return "", &SpecError{field, fmt.Sprintf("the object name %s would be %d characters, Kubernetes takes %d: shorten the names", name, len(name), validation.DNS1123LabelMaxLength)}
	}
	if other, ok := b.taken[name]; ok {
		return "", &SpecError{field, fmt.Sprintf("makes an object named %s, as %s does: rename one", name, other)}
	}
	b.taken[name] = field
	return name, nil
}

func (b *builder) labels(component, config string) map[string]string {
	l := map[string]string{
		"app.kubernetes.io/name":       "throttlelab",
		"app.kubernetes.io/instance":   b.e.Metadata.Name,
		"app.kubernetes.io/managed-by": "throttlelab",
		LabelRun:                       b.opt.RunID,
	}
	if component != "" {
		l["app.kubernetes.io/component"] = component
	}
	if config != "" {
		l[LabelConfig] = config
	}
	return l
}

func (b *builder) meta(name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: b.ns, Labels: labels}
}

func (b *builder) namespace() *corev1.Namespace {
	l := b.labels("", "")
	// Enforce rejects a pod that breaks the profile; warn and audit say so
	// to kubectl users and in the audit log.
	for _, mode := range []string{"enforce", "warn", "audit"} {
		l["pod-security.kubernetes.io/"+mode] = "restricted"
	}
	if b.opt.HostNetwork {
		l["pod-security.kubernetes.io/enforce"] = "privileged"
	}
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: b.ns, Labels: l},
	}
}

func (b *builder) config(path string, c experiment.Config) (ConfigObjects, error) {
	co := ConfigObjects{Name: c.Name}
	svc, err := b.name(path+".name", "svc-"+c.Name)
	if err != nil {
		return co, err
	}
	// kube-proxy's pick is the random balancer; the others balance in the
	// load generator, over the pods' own addresses.
	headless := !b.e.Spec.Balancer.Random()
	co.Service = &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: b.meta(svc, b.labels("server", c.Name)),
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{LabelRun: b.opt.RunID, LabelConfig: c.Name, "app.kubernetes.io/component": "server"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: Port, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}},
		},
	}
	if headless {
		co.Service.Spec.ClusterIP = corev1.ClusterIPNone
	}
	res, err := resources(path+".cpu", c.CPU)
	if err != nil {
		return co, err
	}
	if c.Pod != nil {
		// The instances share one pod: kube-proxy would pick the pod, not
		// an instance, so the load generator balances over their ports.
		headless = true
		co.Service.Spec.ClusterIP = corev1.ClusterIPNone
	}
	var targets []string
	var containers []corev1.Container
	for i := 0; i < c.Instances; i++ {
		name, err := b.name(path+".name", c.Name+"-"+strconv.Itoa(i))
		if err != nil {
			return co, err
		}
		port := b.port()
		if c.Pod != nil && !b.opt.HostNetwork {
			port = Port + i // one network namespace: a port each
		}
		sc := serverContainer(name, c.Server, res, b.opt, port)
		s := Server{Name: name, Pod: name, Container: sc.Name, Port: port}
		if c.Pod != nil {
			sc.Name, s.Pod, s.Container = name, c.Name, name
			if i > 0 {
				// Port names are one namespace in a pod: the Service's
				// "http" is the first instance's (DNS only, the load
				// generator balances).
				pn := "http-" + strconv.Itoa(i)
				sc.Ports[0].Name, sc.ReadinessProbe.HTTPGet.Port = pn, intstr.FromString(pn)
			}
			containers = append(containers, sc)
		} else {
			p := b.pod(name, b.labels("server", c.Name), sc)
			if headless && !b.opt.HostNetwork {
				// With a headless Service of the subdomain's name, the pod is
				// NAME.SERVICE in DNS.
				p.Spec.Hostname, p.Spec.Subdomain = name, svc
			}
			co.Instances = append(co.Instances, p)
		}
		co.Servers = append(co.Servers, s)
		switch {
		case b.opt.HostNetwork:
			targets = append(targets, fmt.Sprintf("http://127.0.0.1:%d", port))
		case headless:
			targets = append(targets, fmt.Sprintf("http://%s.%s:%d", s.Pod, svc, port))
		}
	}
	if c.Pod != nil {
		p, err := b.podOf(path, c, svc, containers)
		if err != nil {
			return co, err
		}
		co.Pod, co.Instances = p, []*corev1.Pod{p}
	}
	if !headless && !b.opt.HostNetwork {
		targets = []string{fmt.Sprintf("http://%s:%d", svc, Port)}
	}

	var probe *experiment.Neighbour
	neighbours := b.e.NeighboursOf(c)
	for i := range neighbours {
		n := &neighbours[i]
		if n.Kind == "probe" {
			probe = n // as in the local backend: the probe is a client
			continue
		}
		field := fmt.Sprintf("spec.neighbours[%d]", i)
		if own := i - len(b.e.Spec.Neighbours); own >= 0 {
			field = fmt.Sprintf("%s.neighbours[%d]", path, own)
		}
		p, err := b.neighbour(field, c.Name, *n)
		if err != nil {
			return co, err
		}
		co.Neighbours = append(co.Neighbours, p)
	}
	for i, l := range b.e.Spec.Loads {
		name, err := b.name(fmt.Sprintf("spec.loads[%d].name", i), "load-"+c.Name+"-"+l.Name)
		if err != nil {
			return co, err
		}
		lc := b.e.LoadConfig(l)
		lc.Targets = targets
		// kube-proxy balances connections, not requests: a new connection
		// per request makes its pick per request, as random is. On the
		// host's network the load generator picks itself, as locally.
		lc.NewConnection = !headless && !b.opt.HostNetwork
		co.Loads = append(co.Loads, b.job(name, c.Name, l.Name, lc, probe))
		var warm *batchv1.Job
		if b.e.Spec.Warmup.Duration > 0 {
			wname, err := b.name(fmt.Sprintf("spec.loads[%d].name", i), "warmup-"+c.Name+"-"+l.Name)
			if err != nil {
				return co, err
			}
			warm = b.warmup(wname, c.Name, l.Name, lc)
		}
		co.Warmups = append(co.Warmups, warm)
	}
	return co, nil
}

// podOf is the one pod of a config with a pod block: its instances'
// containers, each with its own resources, under the pod's spec.resources
// (Kubernetes 1.34+, the PodLevelResources feature): the kubelet writes the
// pod-level limit on the pod's cgroup, its containers' groups inside it.
func (b *builder) podOf(path string, c experiment.Config, svc string, containers []corev1.Container) (*corev1.Pod, error) {
	name, err := b.name(path+".name", c.Name)
	if err != nil {
		return nil, err
	}
	res, err := podResources(path+".pod.cpu", c)
	if err != nil {
		return nil, err
	}
	p := b.pod(name, b.labels("server", c.Name), containers[0])
	p.Spec.Containers = containers
	p.Spec.Resources = &res
	if !b.opt.HostNetwork {
		p.Spec.Hostname, p.Spec.Subdomain = name, svc
	}
	return p, nil
}

// podResources are the pod-level resources of a config with a pod block: its
// CPU request (the limit if not given) and limit. With pod-level resources the API server takes the
// pod's QoS class from them alone, so the pod has a memory request and limit
// (the containers' sum) only where its containers and its CPU make it
// Guaranteed: the class is then the local backend's, the containers'.
func podResources(path string, c experiment.Config) (corev1.ResourceRequirements, error) {
	res, err := resources(path, c.Pod.CPU)
	if err != nil {
		return res, err
	}
	delete(res.Requests, corev1.ResourceMemory)
	delete(res.Limits, corev1.ResourceMemory)
	if _, ok := res.Requests[corev1.ResourceCPU]; !ok {
		// The API server defaults a pod's request to its containers' sum,
		// not to its limit as the spec (and the local backend's pod group)
		// does: given, the pod group's weight is the same on both.
		if res.Requests == nil {
			res.Requests = corev1.ResourceList{}
		}
		res.Requests[corev1.ResourceCPU] = res.Limits[corev1.ResourceCPU]
	}
	own, err := resources(path, c.CPU)
	if err != nil {
		return res, err
	}
	if _, ok := own.Limits[corev1.ResourceMemory]; ok {
		if pk, err := c.Pod.CPU.Kube(); err == nil && cgroup.QoSOf(pk.RequestMilli, pk.LimitMilli) == cgroup.Guaranteed {
			mem := resource.MustParse(GuaranteedMemory)
			mem.Mul(int64(c.Instances))
			if res.Requests == nil {
				res.Requests = corev1.ResourceList{}
			}
			res.Requests[corev1.ResourceMemory], res.Limits[corev1.ResourceMemory] = mem, mem
		}
	}
	return res, nil
}

// neighbour is one neighbour of a config's runs; path is its field.
func (b *builder) neighbour(path, config string, n experiment.Neighbour) (*corev1.Pod, error) {
	name, err := b.name(path+".name", config+"-"+n.Name)
	if err != nil {
		return nil, err
	}
	res, err := resources(path+".cpu", n.CPU)
	if err != nil {
		return nil, err
	}
	var c corev1.Container
	switch n.Kind {
	case "noise", "burst":
		// A burst worker writes one JSON line per cycle on standard output: the pod's log.
		c = manifest.Container(n.Kind, b.opt.Image, res, n.ProcessArgs()...)
	case "server":
		c = serverContainer(n.Name, experiment.NeighbourServer, res, b.opt, b.port())
	default:
		return nil, &SpecError{path + ".kind", fmt.Sprintf("%q has no pod", n.Kind)}
	}
	l := b.labels("neighbour", config)
	l[LabelNeighbour] = n.Name
	return b.pod(name, l, c), nil
}

// job is one load against one config: the load generator writing its
// records, summary and histogram into /results, the probe if the config has
// one (its records in /results/probe), and a container that keeps the pod
// up after the load so that the runner can copy /results out through the
// API (throttlelab k8s pack, over exec) before it deletes the Job.
func (b *builder) job(name, config, load string, lc loadgen.Config, probe *experiment.Neighbour) *batchv1.Job {
	l := b.labels("load", config)
	l[LabelLoad] = load
	results := corev1.VolumeMount{Name: "results", MountPath: ResultsDir}
	main := manifest.Container(LoadContainer, b.opt.Image, loadResources(),
		append(loadArgs(lc), "--out", ResultsDir, "--gomaxprocs", strconv.Itoa(LoadGOMAXPROCS))...)
	main.VolumeMounts = append(main.VolumeMounts, results)
	p := b.pod(name, l, main)
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "results", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	if probe != nil {
		pc := manifest.Container("probe", b.opt.Image, probeResources(),
			append(loadArgs(experiment.ProbeConfig(lc, *probe)), "--out", ResultsDir+"/probe", "--gomaxprocs", strconv.Itoa(ProbeGOMAXPROCS))...)
		pc.VolumeMounts = append(pc.VolumeMounts, results)
		p.Spec.Containers = append(p.Spec.Containers, pc)
	}
	keep := manifest.Container(ResultsContainer, b.opt.Image, resultsResources(), "k8s", "hold", "--for", HoldFor.String())
	keep.VolumeMounts = append(keep.VolumeMounts, results)
	p.Spec.Containers = append(p.Spec.Containers, keep)
	return b.onceJob(name, l, p)
}

// warmup is the local backend's warm-up as a Job: the same load for the
// warm-up's time (a ramp at its top), nothing kept.
func (b *builder) warmup(name, config, load string, lc loadgen.Config) *batchv1.Job {
	l := b.labels("warmup", config)
	l[LabelLoad] = load
	warm := lc
	warm.Duration, warm.Requests = b.e.Spec.Warmup.Duration, 0
	if warm.Mode == loadgen.ModeRamp {
		warm.Ramp.From, warm.RampStep = warm.Ramp.To, b.e.Spec.Warmup.Duration
	}
	p := b.pod(name, l, manifest.Container("warmup", b.opt.Image, loadResources(),
		append(loadArgs(warm), "--gomaxprocs", strconv.Itoa(LoadGOMAXPROCS))...))
	return b.onceJob(name, l, p)
}

// onceJob wraps a pod in a Job that is not retried: a failed load or
// warm-up is a failed run.
func (b *builder) onceJob(name string, l map[string]string, p *corev1.Pod) *batchv1.Job {
	backoff := int32(0)
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: b.meta(name, l),
		Spec: batchv1.JobSpec{
			BackoffLimit: &backoff,
			Template:     corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: p.Spec},
		},
	}
}
