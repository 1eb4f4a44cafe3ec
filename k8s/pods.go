package k8s

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/k8s/manifest"
	"github.com/throttlelab/throttlelab/loadgen"
)

// The load generator's own resources: requested so that it is not a
// BestEffort pod the servers starve, limited so that it cannot take the node,
// with GOMAXPROCS at its limit so that its own quota rarely throttles it.
const (
	LoadCPURequest = "500m"
	LoadCPULimit   = "2"
	LoadGOMAXPROCS = 2
	LoadMemory     = "256Mi"
	LoadMemoryMax  = "1Gi"
	// The probe sends a few requests a second.
	ProbeCPURequest = "100m"
	ProbeCPULimit   = "500m"
	ProbeMemory     = "64Mi"
	ProbeMemoryMax  = "256Mi"
	ProbeGOMAXPROCS = 1
	// GuaranteedMemory is the memory request and limit of a server or
	// neighbour whose CPU settings make it Guaranteed: Kubernetes counts a pod
	// Guaranteed only with memory requested and limited alike, and the local
	// backend's QoS class follows from the CPU settings alone.
	GuaranteedMemory = "256Mi"
	// The container that keeps a load Job's pod up until its results are
	// copied out does nothing but wait.
	ResultsCPURequest = "10m"
	ResultsCPULimit   = "100m"
	ResultsMemory     = "16Mi"
	ResultsMemoryMax  = "64Mi"
)

// Names and paths in a load Job's pod.
const (
	// LoadContainer runs the load; its exit ends the load.
	LoadContainer = "load"
	// ResultsContainer holds the pod up (throttlelab k8s hold) for the copy.
	ResultsContainer = "results"
	// ResultsDir is where the load (and the probe, in probe/) write.
	ResultsDir = "/results"
	// HoldFor bounds the hold: a Job whose runner died ends by itself.
	HoldFor = time.Hour
)

// resources are a container's requests and limits from a spec's CPU settings:
// requests.cpu and limits.cpu exactly as given (none given, none set: a
// config without a limit has no limits.cpu, and a limit alone is defaulted
// to the request by the API server, as the local backend does too).
func resources(path string, c experiment.CPU) (corev1.ResourceRequirements, error) {
	k, err := c.Kube()
	if err != nil {
		// A resolved spec has parsed these already.
		return corev1.ResourceRequirements{}, &SpecError{path, err.Error()}
	}
	var r corev1.ResourceRequirements
	if k.RequestMilli > 0 {
		r.Requests = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(k.RequestMilli, resource.DecimalSI)}
	}
	if k.LimitMilli > 0 {
		r.Limits = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(k.LimitMilli, resource.DecimalSI)}
	}
	if cgroup.QoSOf(k.RequestMilli, k.LimitMilli) == cgroup.Guaranteed {
		mem := resource.MustParse(GuaranteedMemory)
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		r.Requests[corev1.ResourceMemory], r.Limits[corev1.ResourceMemory] = mem, mem
	}
	return r, nil
}

func fixedResources(cpu, cpuMax, mem, memMax string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuMax), corev1.ResourceMemory: resource.MustParse(memMax)},
	}
}

func loadResources() corev1.ResourceRequirements {
	return fixedResources(LoadCPURequest, LoadCPULimit, LoadMemory, LoadMemoryMax)
}

func resultsResources() corev1.ResourceRequirements {
	return fixedResources(ResultsCPURequest, ResultsCPULimit, ResultsMemory, ResultsMemoryMax)
}

func probeResources() corev1.ResourceRequirements {
	return fixedResources(ProbeCPURequest, ProbeCPULimit, ProbeMemory, ProbeMemoryMax)
}

// serverContainer runs `throttlelab serve` with the flags the local backend
// gives an instance, listening on port (on loopback with HostNetwork), ready
// when /healthz answers.
func serverContainer(name string, s experiment.Server, res corev1.ResourceRequirements, opt Options, port int) corev1.Container {
	listen := ":" + strconv.Itoa(port)
	if opt.HostNetwork {
		listen = "127.0.0.1" + listen
	}
	c := manifest.Container("server", opt.Image, res, s.ServeArgs(name, listen, opt.BurnIterationsPerMs)...)
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}}
	get := &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}
	if opt.HostNetwork {
		get.Host = "127.0.0.1" // the kubelet probes from the host's network
	}
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: get},
		PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 3,
	}
	return c
}

// pod is a bare pod of one container, restricted-compliant, on the node of
// the run's other pods.
func (b *builder) pod(name string, labels map[string]string, c corev1.Container) *corev1.Pod {
	t, f := true, false
	uid := int64(manifest.UID)
	grace := int64(5)
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: b.meta(name, labels),
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{c},
			// A process that ends, ends the run, as in the local backend: a
			// restart would hide it and reset what it measured.
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &f,
			EnableServiceLinks:            &f,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: &t, RunAsUser: &uid, RunAsGroup: &uid,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			// Neighbours are only neighbours on the same machine, and the
			// local backend runs everything on one: every pod of the run
			// goes where the first one went.
			Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelRun: b.opt.RunID}},
					TopologyKey:   corev1.LabelHostname,
				}},
			}},
			Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	if b.opt.HostNetwork {
		// Without a network plugin the node is not ready, and stays tainted so.
		p.Spec.HostNetwork = true
		p.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
		p.Spec.Tolerations = []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists}}
	}
	return p
}

// loadArgs are the `throttlelab load` flags of a load configuration.
func loadArgs(c loadgen.Config) []string {
	a := []string{"load", "--mode", string(c.Mode), "--balancer", c.Balancer.String(), "--request", string(c.Workload.Kind)}
	switch c.Workload.Kind {
	case loadgen.KindTile:
		a = append(a, "--tiles", c.Workload.Tiles.String())
	case loadgen.KindBurn:
		a = append(a, "--burn", c.Workload.Burn.String())
	}
	if c.Workers > 0 {
		a = append(a, "--workers", strconv.Itoa(c.Workers))
	}
	if c.Mode == loadgen.ModeRamp {
		a = append(a, "--ramp", c.Ramp.String(), "--step", c.RampStep.String())
	}
	if c.Rate > 0 {
		a = append(a, "--rate", strconv.FormatFloat(c.Rate, 'g', -1, 64))
	}
	if c.Arrivals != "" {
		a = append(a, "--arrivals", c.Arrivals)
	}
	if c.Mode == loadgen.ModeOnOff {
		a = append(a, "--sources", strconv.Itoa(c.Sources), "--on", c.OnMean.String(), "--off", c.OffMean.String())
	}
	if c.Duration > 0 {
		a = append(a, "--duration", c.Duration.String())
	}
	if c.Requests > 0 {
		a = append(a, "--requests", strconv.FormatInt(c.Requests, 10))
	}
	if c.Timeout > 0 {
		a = append(a, "--timeout", c.Timeout.String())
	}
	a = append(a, "--seed", strconv.FormatUint(c.Seed, 10))
	if c.NewConnection {
		a = append(a, "--new-connection")
	}
	for _, t := range c.Targets {
		a = append(a, "--target", t)
	}
	return a
}
