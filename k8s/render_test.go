package k8s

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/internal/golden"

	corev1 "k8s.io/api/core/v1"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/k8s/manifest"
	"github.com/throttlelab/throttlelab/presets"
	"github.com/throttlelab/throttlelab/units"
)

// goldenOptions are the options every golden file is rendered with.
var goldenOptions = Options{Image: "throttlelab:dev"}

// goldenCase is one spec with a golden file: every example and every preset
// at its original scale.
type goldenCase struct {
	name string
	load func() (*experiment.Experiment, error)
}

func goldenCases(t *testing.T) []goldenCase {
	t.Helper()
	var cases []goldenCase
	examples, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	for _, f := range examples {
		cases = append(cases, goldenCase{"example-" + strings.TrimSuffix(filepath.Base(f), ".yaml"), func() (*experiment.Experiment, error) { return experiment.LoadFile(f) }})
	}
	for _, p := range presets.All() {
		cases = append(cases, goldenCase{"preset-" + p.Name, p.Spec})
	}
	return cases
}

// renderGolden renders a case as the golden file holds it: the YAML, or for a
// spec the cluster cannot express, the error.
func renderGolden(t *testing.T, c goldenCase) (out []byte, ext string) {
	t.Helper()
	e, err := c.load()
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	m, err := Render(e, goldenOptions)
	var se *SpecError
	if errors.As(err, &se) {
		return []byte(err.Error() + "\n"), ".err"
	}
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	var b bytes.Buffer
	if err := m.WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), ".yaml"
}

// TestGolden renders every example and preset and compares the bytes with
// testdata/golden (go test ./k8s -run Golden -update rewrites them).
func TestGolden(t *testing.T) {
	dir := filepath.Join("testdata", "golden")
	if golden.Update() { // no stale files
		os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			got, ext := renderGolden(t, c)
			again, _ := renderGolden(t, c)
			if !bytes.Equal(got, again) {
				t.Fatalf("two renders of the same spec differ")
			}
			golden.Compare(t, filepath.Join(dir, c.name+ext), got)
		})
	}
}

// TestCPUExactlyAsGiven checks the CPU requests and limits of server and
// neighbour pods against the spec, and the QoS class they make.
func TestCPUExactlyAsGiven(t *testing.T) {
	q := func(t *testing.T, s string) units.CPUQuantity {
		t.Helper()
		v, err := units.ParseCPUQuantity(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		cpu              experiment.CPU
		request, limit   string // "" for none
		guaranteedMemory bool
	}{
		{experiment.CPU{}, "", "", false},
		{experiment.CPU{Request: q(t, "250m")}, "250m", "", false},
		{experiment.CPU{Request: q(t, "0.25"), Limit: q(t, "0.25")}, "250m", "250m", true},
		{experiment.CPU{Limit: q(t, "2")}, "", "2", true}, // the API server defaults the request to the limit
		{experiment.CPU{Request: q(t, "1"), Limit: q(t, "2500m")}, "1", "2500m", false},
		{experiment.CPU{Request: q(t, "9766m")}, "9766m", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.cpu.Request.String()+"/"+tt.cpu.Limit.String(), func(t *testing.T) {
			e := parse(t, `
apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata: {name: cpu}
spec:
  workload: {request: api}
  load: {mode: sequential, requests: 10}
  configs: [{name: sut, instances: 2}]
  neighbours: [{name: hog, kind: noise}]
`)
			e.Spec.Configs[0].CPU = tt.cpu
			e.Spec.Neighbours[0].CPU = tt.cpu
			m, err := Render(e, goldenOptions)
			if err != nil {
				t.Fatal(err)
			}
			pods := append(append([]*corev1.Pod{}, m.Configs[0].Instances...), m.Configs[0].Neighbours...)
			if len(pods) != 3 {
				t.Fatalf("%d pods, want 2 instances and a neighbour", len(pods))
			}
			for _, p := range pods {
				r := p.Spec.Containers[0].Resources
				if got := quantity(r.Requests, corev1.ResourceCPU); got != tt.request {
					t.Errorf("%s: requests.cpu %q, want %q", p.Name, got, tt.request)
				}
				if got := quantity(r.Limits, corev1.ResourceCPU); got != tt.limit {
					t.Errorf("%s: limits.cpu %q, want %q", p.Name, got, tt.limit)
				}
				mem := quantity(r.Limits, corev1.ResourceMemory) != "" && quantity(r.Requests, corev1.ResourceMemory) == quantity(r.Limits, corev1.ResourceMemory)
				if mem != tt.guaranteedMemory || (!mem && (len(r.Requests) > 1 || quantity(r.Requests, corev1.ResourceMemory) != "")) {
					t.Errorf("%s: memory %v, want Guaranteed memory %v", p.Name, r, tt.guaranteedMemory)
				}
			}
		})
	}
}

func quantity(l corev1.ResourceList, name corev1.ResourceName) string {
	q, ok := l[name]
	if !ok {
		return ""
	}
	return q.String()
}

func parse(t *testing.T, spec string) *experiment.Experiment {
	t.Helper()
	e, err := experiment.Parse([]byte(spec), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestBadInput feeds specs and options that cannot be rendered and checks
// that the error names the field or option, in one line.
func TestBadInput(t *testing.T) {
	base := `
apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata: {name: bad}
spec:
  workload: {request: api}
  load: {mode: sequential, requests: 10}
  configs: [{name: sut, cpu: {request: "1", limit: "2"}}]
`
	tests := []struct {
		name  string
		edit  func(e *experiment.Experiment, o *Options)
		field string // the SpecError's field, or the OptionError's option
		want  string
	}{
		{"cpuset", func(e *experiment.Experiment, o *Options) { e.Spec.Configs[0].CPU.Cpuset = experiment.CPURange(0, 1) }, "spec.configs[0].cpu.cpuset", "static CPU manager"},
		{"burst", func(e *experiment.Experiment, o *Options) { e.Spec.Configs[0].CPU.Burst.Duration = 1e8 }, "spec.configs[0].cpu.burst", "no API for CPU burst"},
		{"period", func(e *experiment.Experiment, o *Options) { e.Spec.Configs[0].CPU.Period.Duration = 5e7 }, "spec.configs[0].cpu.period", "kubelet"},
		{"neighbour burst", func(e *experiment.Experiment, o *Options) {
			e.Spec.Neighbours = []experiment.Neighbour{{Name: "n", Kind: "noise", CPU: experiment.CPU{Limit: units.Millicores(1000), Burst: experiment.Duration{Duration: 1e7}}}}
		}, "spec.neighbours[0].cpu.burst", "burst"},
		{"config's neighbour cpuset", func(e *experiment.Experiment, o *Options) {
			e.Spec.Configs[0].Neighbours = []experiment.Neighbour{{Name: "n", Kind: "noise", CPU: experiment.CPU{Cpuset: experiment.CPURange(1, 1)}}}
		}, "spec.configs[0].neighbours[0].cpu.cpuset", "cpuset"},
		{"upper case name", func(e *experiment.Experiment, o *Options) { e.Spec.Configs[0].Name = "Limited" }, "spec.configs[0].name", "not a DNS label"},
		{"underscore", func(e *experiment.Experiment, o *Options) { e.Spec.Configs[0].Name = "a_b" }, "spec.configs[0].name", "not a DNS label"},
		{"dot", func(e *experiment.Experiment, o *Options) { e.Metadata.Name = "a.b" }, "metadata.name", "not a DNS label"},
		{"load name", func(e *experiment.Experiment, o *Options) { e.Spec.Loads[0].Name = "Load_1" }, "spec.loads[0].name", "not a DNS label"},
		{"neighbour name", func(e *experiment.Experiment, o *Options) {
			e.Spec.Neighbours = []experiment.Neighbour{{Name: "Hog", Kind: "noise"}}
		}, "spec.neighbours[0].name", "not a DNS label"},
		{"long config name", func(e *experiment.Experiment, o *Options) { e.Spec.Configs[0].Name = strings.Repeat("c", 60) }, "spec.configs[0].name", "would be 64 characters"},
		{"long job name", func(e *experiment.Experiment, o *Options) { e.Spec.Loads[0].Name = strings.Repeat("l", 55) }, "spec.loads[0].name", "load-sut-"},
		{"long namespace", func(e *experiment.Experiment, o *Options) { e.Metadata.Name = strings.Repeat("x", 55) }, "metadata.name", "give a namespace"},
		{"names collide", func(e *experiment.Experiment, o *Options) {
			e.Spec.Neighbours = []experiment.Neighbour{{Name: "0", Kind: "noise"}}
		}, "spec.neighbours[0].name", "sut-0"},
		{"image upper case", func(e *experiment.Experiment, o *Options) { o.Image = "Throttlelab:v1" }, "image", "not an image reference"},
		{"image spaces", func(e *experiment.Experiment, o *Options) { o.Image = "throttle lab" }, "image", "not an image reference"},
		{"image scheme", func(e *experiment.Experiment, o *Options) { o.Image = "https://registry.example/throttlelab" }, "image", "not an image reference"},
		{"image bad digest", func(e *experiment.Experiment, o *Options) { o.Image = "throttlelab@sha256:abc" }, "image", "not an image reference"},
		{"image empty tag", func(e *experiment.Experiment, o *Options) { o.Image = "throttlelab:" }, "image", "not an image reference"},
		{"no image", func(e *experiment.Experiment, o *Options) { o.Image = "" }, "image", "missing"},
		{"namespace", func(e *experiment.Experiment, o *Options) { o.Namespace = "Lab" }, "namespace", "not a DNS label"},
		{"run id", func(e *experiment.Experiment, o *Options) { o.RunID = "run/1" }, "run ID", "label value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := parse(t, base)
			o := goldenOptions
			tt.edit(e, &o)
			m, err := Render(e, o)
			if m != nil || err == nil {
				t.Fatalf("rendered, want an error naming %s", tt.field)
			}
			var se *SpecError
			var oe *manifest.OptionError
			switch {
			case errors.As(err, &se):
				if se.Field != tt.field {
					t.Errorf("error on %s, want %s: %v", se.Field, tt.field, err)
				}
			case errors.As(err, &oe):
				if oe.Option != tt.field {
					t.Errorf("error on option %s, want %s: %v", oe.Option, tt.field, err)
				}
			default:
				t.Fatalf("%T %v: want a SpecError or OptionError", err, err)
			}
			if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%q: want one line containing %q", err, tt.want)
			}
		})
	}
}

// TestRestrictedPods checks every pod template for what the restricted Pod
// Security Standard demands (the apiserver test checks it for real).
func TestRestrictedPods(t *testing.T) {
	for _, c := range goldenCases(t) {
		e, err := c.load()
		if err != nil {
			t.Fatal(err)
		}
		m, err := Render(e, goldenOptions)
		if err != nil {
			continue // refused specs have no pods; TestGolden checks why
		}
		if m.Namespace.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
			t.Errorf("%s: namespace labels %v", c.name, m.Namespace.Labels)
		}
		for _, co := range m.Configs {
			var specs []*corev1.PodSpec
			for _, p := range append(append([]*corev1.Pod{}, co.Instances...), co.Neighbours...) {
				specs = append(specs, &p.Spec)
			}
			for _, j := range co.Loads {
				specs = append(specs, &j.Spec.Template.Spec)
			}
			for _, j := range co.Warmups {
				if j != nil {
					specs = append(specs, &j.Spec.Template.Spec)
				}
			}
			for _, s := range specs {
				checkRestricted(t, c.name, s)
			}
		}
	}
}

func checkRestricted(t *testing.T, name string, s *corev1.PodSpec) {
	t.Helper()
	sc := s.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod security context %+v", name, sc)
	}
	for _, c := range append(append([]corev1.Container{}, s.InitContainers...), s.Containers...) {
		cs := c.SecurityContext
		if cs == nil || cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation ||
			cs.Capabilities == nil || len(cs.Capabilities.Drop) != 1 || cs.Capabilities.Drop[0] != "ALL" ||
			cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem {
			t.Errorf("%s: container %s security context %+v", name, c.Name, cs)
		}
	}
}

// TestBalancerService: random goes through a ClusterIP Service, one target
// and a new connection per request; the others get every pod's address.
func TestBalancerService(t *testing.T) {
	for _, bal := range []string{"random", "roundrobin", "ingress:2", "least", "p2c"} {
		e := parse(t, `
apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata: {name: bal}
spec:
  workload: {request: api}
  load: {mode: sequential, requests: 10}
  balancer: "`+bal+`"
  configs: [{name: sut, instances: 3}]
  neighbours: [{name: watch, kind: probe}]
`)
		m, err := Render(e, goldenOptions)
		if err != nil {
			t.Fatal(err)
		}
		co := m.Configs[0]
		job := co.Loads[0].Spec.Template.Spec
		args := strings.Join(job.Containers[0].Args, " ")
		headless := co.Service.Spec.ClusterIP == corev1.ClusterIPNone
		if headless == (bal == "random") {
			t.Errorf("%s: Service clusterIP %q", bal, co.Service.Spec.ClusterIP)
		}
		if bal == "random" {
			if strings.Count(args, "--target") != 1 || !strings.Contains(args, "--target http://svc-sut:8080") || !strings.Contains(args, "--new-connection") {
				t.Errorf("random: load args %s", args)
			}
		} else {
			for _, p := range co.Instances {
				if p.Spec.Subdomain != co.Service.Name || p.Spec.Hostname != p.Name || !strings.Contains(args, "--target http://"+p.Name+".svc-sut:8080") {
					t.Errorf("%s: pod %s hostname %q subdomain %q, load args %s", bal, p.Name, p.Spec.Hostname, p.Spec.Subdomain, args)
				}
			}
			if strings.Contains(args, "--new-connection") || !strings.Contains(args, "--balancer "+bal) {
				t.Errorf("%s: load args %s", bal, args)
			}
		}
		if len(job.Containers) != 3 || job.Containers[1].Name != "probe" || job.Containers[2].Name != ResultsContainer || len(co.Neighbours) != 0 {
			t.Errorf("%s: the probe is not a container of the load Job: %d containers, %d neighbour pods", bal, len(job.Containers), len(co.Neighbours))
		}
	}
}

// TestQoSMatchesLocal checks that the memory added for Guaranteed pods
// follows the local backend's QoS class of the CPU settings.
func TestQoSMatchesLocal(t *testing.T) {
	for _, c := range goldenCases(t) {
		e, err := c.load()
		if err != nil {
			t.Fatal(err)
		}
		m, err := Render(e, goldenOptions)
		if err != nil {
			continue
		}
		for i, co := range m.Configs {
			_, qos, err := e.Settings(e.Spec.Configs[i])
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range co.Instances {
				if got := qosOf(p.Spec.Containers[0].Resources); got != qos {
					t.Errorf("%s: %s is %s, the local backend's class is %s", c.name, p.Name, got, qos)
				}
			}
		}
	}
}

// qosOf is the kubelet's QoS class of a one-container pod.
func qosOf(r corev1.ResourceRequirements) cgroup.QoSClass {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return cgroup.BestEffort
	}
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		lim, ok := r.Limits[res]
		if !ok {
			return cgroup.Burstable
		}
		if req, ok := r.Requests[res]; ok && req.Cmp(lim) != 0 {
			return cgroup.Burstable
		}
	}
	return cgroup.Guaranteed
}

// TestHostNetwork: the rig's option puts every pod on the host's network,
// servers on loopback at distinct ports (also the containers of one pod
// under a pod-level limit), the load sent there directly.
func TestHostNetwork(t *testing.T) {
	for _, tt := range []struct {
		file    string
		servers int
	}{{"limits", 5}, {"pod-limit", 4}} {
		t.Run(tt.file, func(t *testing.T) {
			e, err := experiment.LoadFile("../examples/" + tt.file + ".yaml")
			if err != nil {
				t.Fatal(err)
			}
			m, err := Render(e, Options{Image: "throttlelab:dev", HostNetwork: true, HostPort: 20000})
			if err != nil {
				t.Fatal(err)
			}
			if m.Namespace.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
				t.Errorf("namespace labels %v", m.Namespace.Labels)
			}
			seen := map[int]bool{}
			for _, co := range m.Configs {
				args := strings.Join(co.Loads[0].Spec.Template.Spec.Containers[0].Args, " ")
				for _, s := range co.Servers {
					if seen[s.Port] || s.Port < 20000 {
						t.Errorf("%s: port %d again or below the first", s.Name, s.Port)
					}
					seen[s.Port] = true
					p, c := co.ServerContainer(s)
					if c == nil {
						t.Fatalf("%s: no container %s in a pod %s", s.Name, s.Container, s.Pod)
					}
					if !p.Spec.HostNetwork || len(p.Spec.Tolerations) != 1 || !strings.Contains(strings.Join(c.Args, " "), "--listen 127.0.0.1:"+strconv.Itoa(s.Port)) ||
						c.ReadinessProbe.HTTPGet.Host != "127.0.0.1" || !strings.Contains(args, "--target http://127.0.0.1:"+strconv.Itoa(s.Port)) {
						t.Errorf("%s: host network %v, args %v, probe %+v, load %s", s.Name, p.Spec.HostNetwork, c.Args, c.ReadinessProbe.HTTPGet, args)
					}
				}
				if strings.Contains(args, "--new-connection") {
					t.Errorf("%s: the load generator picks itself on the host network: %s", co.Name, args)
				}
			}
			if len(seen) != tt.servers {
				t.Errorf("%d distinct ports for %d instances", len(seen), tt.servers)
			}
		})
	}
}

// TestPodLevel: a config with a pod block is one pod whose containers are
// its instances, each with its own resources and port, under spec.resources
// with the pod block's limit (and its request, the limit if not given); the
// load goes to every container's port, balanced by the load generator.
func TestPodLevel(t *testing.T) {
	e, err := experiment.LoadFile("../examples/pod-limit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, hostNet := range []bool{false, true} {
		m, err := Render(e, Options{Image: "throttlelab:dev", HostNetwork: hostNet})
		if err != nil {
			t.Fatal(err)
		}
		pod, per := m.Configs[0], m.Configs[1]
		if len(pod.Instances) != 1 || pod.Pod != pod.Instances[0] || len(pod.Servers) != 2 || len(pod.Pod.Spec.Containers) != 2 {
			t.Fatalf("host network %v: %d pods, %d servers for a pod of 2 instances", hostNet, len(pod.Instances), len(pod.Servers))
		}
		r := pod.Pod.Spec.Resources
		if r == nil || r.Limits.Cpu().MilliValue() != 800 || r.Requests.Cpu().MilliValue() != 800 || !r.Limits.Memory().IsZero() {
			t.Errorf("host network %v: pod-level resources %+v, want cpu 800m/800m and no memory", hostNet, r)
		}
		if per.Pod != nil || len(per.Instances) != 2 || per.Instances[0].Spec.Resources != nil {
			t.Errorf("host network %v: the per-container config has a pod-level block or %d pods", hostNet, len(per.Instances))
		}
		args := strings.Join(pod.Loads[0].Spec.Template.Spec.Containers[0].Args, " ")
		ports := map[int]bool{}
		for i, s := range pod.Servers {
			p, c := pod.ServerContainer(s)
			if p != pod.Pod || c == nil || c.Name != s.Name || s.Name != "pod-"+strconv.Itoa(i) {
				t.Fatalf("host network %v: server %+v is not container %d of pod %s", hostNet, s, i, pod.Pod.Name)
			}
			if c.Resources.Limits.Cpu().MilliValue() != 600 || c.Resources.Requests.Cpu().MilliValue() != 300 {
				t.Errorf("%s: container resources %+v, want 300m/600m", s.Name, c.Resources)
			}
			if ports[s.Port] || int(c.Ports[0].ContainerPort) != s.Port || !strings.Contains(args, ":"+strconv.Itoa(s.Port)) {
				t.Errorf("%s: port %d again, or not the container's %d, or not in the load's targets %s", s.Name, s.Port, c.Ports[0].ContainerPort, args)
			}
			ports[s.Port] = true
		}
		if strings.Contains(args, "--new-connection") || pod.Service.Spec.ClusterIP != corev1.ClusterIPNone {
			t.Errorf("host network %v: kube-proxy would pick the pod, not an instance: service %q, load %s", hostNet, pod.Service.Spec.ClusterIP, args)
		}
	}
}
