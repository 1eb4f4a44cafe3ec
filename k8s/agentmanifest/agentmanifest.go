package agentmanifest

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/throttlelab/throttlelab/agent"
	"github.com/throttlelab/throttlelab/k8s/manifest"
)

// Options control how the agent's manifests are rendered.
type Options struct {
	// Namespace holds the agent (default throttlelab-agent).
	Namespace string
	// CreateNamespace adds the Namespace, labelled for the privileged Pod
	// Security profile the read-only hostPath volumes need (the chart's
	// namespace.create). Off, the namespace must exist and allow them.
	CreateNamespace bool
	// Release names the objects as a Helm release of the chart would
	// (default throttlelab-agent): see FullName.
	Release string
	// Image is the throttlelab image (required).
	Image string
	// Port the agent serves on (default agent.DefaultPort, 9101).
	Port int
	// Args are extra agent flags (--window 24h, --max-throttled 0.01).
	Args []string
	// Owners grants the agent list on pods and passes --owners, so that
	// its metrics name each pod's Deployment, StatefulSet, ...
	Owners bool
	// PodMonitor adds a Prometheus Operator PodMonitor.
	PodMonitor bool
	// StateEmptyDir keeps the checkpoints in an emptyDir (lost with the
	// pod: every rollout starts the window again) instead of the default
	// hostPath StateHostDir/NAMESPACE/RELEASE, which outlives the pods.
	StateEmptyDir bool
	// HostProc runs the agent in the host's PID namespace, as root with
	// only CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH, so that it reads each
	// container's runtime (Go, JVM, ...) from /proc (the chart's
	// runtime.hostProc). The agent can then read every process's
	// environment: off by default.
	HostProc bool
}

// Name is the chart's name, and every object's with the default release.
const Name = "throttlelab-agent"

// StateHostDir is where on each node the checkpoints of a release are kept
// (in NAMESPACE/RELEASE under it), unless Options.StateEmptyDir.
const StateHostDir = "/var/lib/throttlelab"

// PodSelector are labels every agent pod carries, whatever its release:
// they find the agents of a cluster.
var PodSelector = map[string]string{"app.kubernetes.io/name": "throttlelab", "app.kubernetes.io/component": "agent"}

// FullName is the name of a release's namespaced objects, as the chart's
// fullname helper makes it: the release's name if it holds the chart's,
// else RELEASE-throttlelab-agent, cut to 63 characters.
func FullName(release string) string {
	n := release
	if !strings.Contains(release, Name) {
		n = release + "-" + Name
	}
	if len(n) > 63 {
		n = n[:63]
	}
	return strings.TrimSuffix(n, "-")
}

// ClusterName is the name of a release's cluster-wide objects (its
// ClusterRole and ClusterRoleBinding): NAMESPACE-FULLNAME, cut to 63, so
// that releases of one name in two namespaces do not share them.
func ClusterName(namespace, release string) string {
	n := namespace + "-" + FullName(release)
	if len(n) > 63 {
		n = n[:63]
	}
	return strings.TrimSuffix(n, "-")
}

// Manifests are the objects that run the agent on every node.
type Manifests struct {
	// Namespace is nil unless Options.CreateNamespace.
	Namespace      *corev1.Namespace
	ServiceAccount *corev1.ServiceAccount
	// ClusterRole and its binding: list pods (Owners only).
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	DaemonSet          *appsv1.DaemonSet
	Service            *corev1.Service
	// PodMonitor is a monitoring.coreos.com/v1 PodMonitor (nil unless asked).
	PodMonitor *unstructured.Unstructured
}

// Render builds the agent's manifests. The pod meets the restricted
// Pod Security profile in everything but its hostPath volumes (read-only:
// the cgroup filesystem and the kubelet's log directories; read-write: the
// checkpoints' directory, whose owner a short init container sets), which
// even the baseline profile forbids: its namespace must allow them, which
// is why it gets a namespace of its own.
func Render(opt Options) (*Manifests, error) {
	if opt.Namespace == "" {
		opt.Namespace = Name
	}
	if opt.Release == "" {
		opt.Release = Name
	}
	if opt.Port == 0 {
		opt.Port = agent.DefaultPort
	}
	if errs := validation.IsDNS1123Label(opt.Namespace); len(errs) > 0 {
		return nil, &manifest.OptionError{Option: "namespace", Msg: fmt.Sprintf("%q: %s", opt.Namespace, errs[0])}
	}
	if errs := validation.IsDNS1123Label(opt.Release); len(errs) > 0 || len(opt.Release) > 53 {
		msg := "at most 53 characters (Helm's limit)"
		if len(errs) > 0 {
			msg = errs[0]
		}
		return nil, &manifest.OptionError{Option: "release", Msg: fmt.Sprintf("%q: %s", opt.Release, msg)}
	}
	if err := manifest.CheckImage(opt.Image); err != nil {
		return nil, err
	}
	if opt.Port < 1 || opt.Port > 65535 {
		return nil, &manifest.OptionError{Option: "port", Msg: fmt.Sprintf("%d: give 1 to 65535", opt.Port)}
	}
	name := FullName(opt.Release)
	podLabels := map[string]string{"app.kubernetes.io/instance": opt.Release}
	for k, v := range PodSelector {
		podLabels[k] = v
	}
	labels := map[string]string{"app.kubernetes.io/managed-by": "throttlelab"}
	for k, v := range podLabels {
		labels[k] = v
	}
	if v := imageTag(opt.Image); v != "" {
		labels["app.kubernetes.io/version"] = v
	}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: opt.Namespace, Labels: labels}
	}
	m := &Manifests{}
	if opt.CreateNamespace {
		nsLabels := map[string]string{
			// hostPath volumes need the privileged profile; warn and audit at
			// baseline say which field needs it.
			"pod-security.kubernetes.io/enforce": "privileged",
			"pod-security.kubernetes.io/warn":    "baseline",
			"pod-security.kubernetes.io/audit":   "baseline",
		}
		for k, v := range labels {
			nsLabels[k] = v
		}
		m.Namespace = &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: opt.Namespace, Labels: nsLabels}}
	}
	m.ServiceAccount = &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta(name)}

	args := []string{"agent", "--listen", ":" + strconv.Itoa(opt.Port), "--root", "/host", "--state-dir", StateHostDir}
	if opt.Owners {
		args = append(args, "--owners")
		crMeta := metav1.ObjectMeta{Name: ClusterName(opt.Namespace, opt.Release), Labels: labels}
		m.ClusterRole = &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}, ObjectMeta: crMeta,
			// The agent lists the pods of its own node (a field selector on
			// spec.nodeName); RBAC cannot narrow a list to one node.
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}}}
		m.ClusterRoleBinding = &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"}, ObjectMeta: crMeta,
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: crMeta.Name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: opt.Namespace}}}
	}
	args = append(args, opt.Args...)

	c := manifest.Container("agent", opt.Image, corev1.ResourceRequirements{
		// No CPU limit: a throttled agent would miss its own 10 ms samples.
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
	}, args...)
	c.Env = []corev1.EnvVar{
		{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		// One sampling goroutine and one replay worker: two threads are enough.
		{Name: "GOMAXPROCS", Value: "2"},
	}
	c.Ports = []corev1.ContainerPort{{Name: "metrics", ContainerPort: int32(opt.Port), Protocol: corev1.ProtocolTCP}}
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("metrics")}},
		PeriodSeconds: 10, TimeoutSeconds: 2}
	rro := corev1.RecursiveReadOnlyIfPossible
	hostDirs := []struct{ name, path string }{
		{"cgroup", "/sys/fs/cgroup"}, // usage, cpu.stat, limits of every container
	}
	if !opt.Owners {
		// Names from the kubelet's log directories; with the owner lookup
		// they come from the pod list instead (the kubelet may make
		// /var/log/pods 0750 root, which the agent's user cannot open).
		hostDirs = append(hostDirs, struct{ name, path string }{"pod-logs", "/var/log/pods"}, // pod names (NAMESPACE_POD_UID)
			struct{ name, path string }{"container-logs", "/var/log/containers"}) // container names (links)
	}
	var vols []corev1.Volume
	for _, h := range hostDirs {
		// No type check: a node without the kubelet's log directories still
		// runs the agent (names fall back to the cgroup paths).
		vols = append(vols, corev1.Volume{Name: h.name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: h.path}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: h.name, MountPath: "/host" + h.path, ReadOnly: true, RecursiveReadOnly: &rro})
	}
	stateMount := corev1.VolumeMount{Name: "state", MountPath: StateHostDir}
	c.VolumeMounts = append(c.VolumeMounts, stateMount)
	var inits []corev1.Container
	if opt.StateEmptyDir {
		// Lost with the pod: only the container's restarts keep the window.
		vols = append(vols, corev1.Volume{Name: "state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	} else {
		// The checkpoints outlive the pods (a helm upgrade's rollout, a
		// deleted pod), one directory per release. The kubelet makes it
		// root's; the init container hands it to the agent's user, with
		// CAP_CHOWN and nothing else.
		dot := corev1.HostPathDirectoryOrCreate
		vols = append(vols, corev1.Volume{Name: "state", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
			Path: StateHostDir + "/" + opt.Namespace + "/" + opt.Release, Type: &dot}}})
		ic := manifest.Container("state-owner", opt.Image, corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		}, "k8s", "state-dir", StateHostDir, "--owner", stateOwner(opt.HostProc))
		root, no := int64(0), false
		ic.SecurityContext.RunAsUser = &root
		ic.SecurityContext.RunAsNonRoot = &no
		ic.SecurityContext.Capabilities.Add = []corev1.Capability{"CHOWN"}
		ic.VolumeMounts = append(ic.VolumeMounts, stateMount)
		inits = append(inits, ic)
	}
	if opt.HostProc {
		// Other users' /proc/PID/exe and environ need root, CAP_SYS_PTRACE
		// (read access only: no attach is made) and CAP_DAC_READ_SEARCH
		// (environ is 0400, its process's user's).
		root, no := int64(0), false
		c.SecurityContext.RunAsUser = &root
		c.SecurityContext.RunAsNonRoot = &no
		c.SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_PTRACE", "DAC_READ_SEARCH"}
	}
	t, f := true, false
	uid := int64(manifest.UID)
	grace := int64(30) // time for the last checkpoint
	m.DaemonSet = &appsv1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"}, ObjectMeta: meta(name),
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptrTo(intstr.FromString("10%"))}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					ServiceAccountName:            name,
					HostPID:                       opt.HostProc,
					AutomountServiceAccountToken:  &opt.Owners,
					EnableServiceLinks:            &f,
					TerminationGracePeriodSeconds: &grace,
					InitContainers:                inits,
					Containers:                    []corev1.Container{c},
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: &t, RunAsUser: &uid, RunAsGroup: &uid,
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					// Every node, tainted or not: its containers are to be seen.
					Tolerations:       []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					PriorityClassName: "system-node-critical",
					Volumes:           append(vols, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}),
				},
			},
		}}
	m.Service = &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: meta(name),
		Spec: corev1.ServiceSpec{
			// Headless: Prometheus scrapes every agent, not one at random.
			ClusterIP: corev1.ClusterIPNone,
			Selector:  podLabels,
			Ports:     []corev1.ServicePort{{Name: "metrics", Port: int32(opt.Port), TargetPort: intstr.FromString("metrics"), Protocol: corev1.ProtocolTCP}},
		}}
	if opt.PodMonitor {
		m.PodMonitor = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "monitoring.coreos.com/v1",
			"kind":       "PodMonitor",
			"metadata":   map[string]any{"name": name, "namespace": opt.Namespace, "labels": toAny(labels)},
			"spec": map[string]any{
				"selector":            map[string]any{"matchLabels": toAny(podLabels)},
				"podMetricsEndpoints": []any{map[string]any{"port": "metrics", "interval": "15s", "path": "/metrics"}},
			},
		}}
	}
	return m, nil
}

// stateOwner is the user:group the state directory is handed to: the
// agent's own user, or root's when the agent runs as root (HostProc).
func stateOwner(hostProc bool) string {
	if hostProc {
		return "0:0"
	}
	return fmt.Sprintf("%d:%d", manifest.UID, manifest.UID)
}

// imageTag is an image reference's tag, if it is a valid label value (the
// chart's app.kubernetes.io/version is its appVersion, the image's tag).
func imageTag(ref string) string {
	if strings.Contains(ref, "@") {
		return ""
	}
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ""
	}
	if len(validation.IsValidLabelValue(ref[i+1:])) > 0 {
		return ""
	}
	return ref[i+1:]
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

// Objects returns the objects in the order to apply them.
func (m *Manifests) Objects() []runtime.Object {
	var out []runtime.Object
	if m.Namespace != nil {
		out = append(out, m.Namespace)
	}
	out = append(out, m.ServiceAccount)
	if m.ClusterRole != nil {
		out = append(out, m.ClusterRole, m.ClusterRoleBinding)
	}
	out = append(out, m.DaemonSet, m.Service)
	if m.PodMonitor != nil {
		out = append(out, m.PodMonitor)
	}
	return out
}

// WriteYAML writes the objects as one multi-document YAML stream, keys
// sorted: the same options give the same bytes.
func (m *Manifests) WriteYAML(w io.Writer) error {
	header := fmt.Sprintf("# throttlelab k8s render agent: the agent on every node, in namespace %s.\n", m.ServiceAccount.Namespace) +
		"# The namespace must allow hostPath volumes (the privileged Pod Security profile);\n" +
		"# the agent's container is otherwise restricted (docs/fleet.md).\n"
	return manifest.WriteDocuments(w, header, m.Objects())
}
