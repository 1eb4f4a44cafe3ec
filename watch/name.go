package watch

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/throttlelab/throttlelab/cgroup"
)

// Kind is what a group is to whoever made it.
type Kind string

// Kinds of group.
const (
	KindRoot Kind = "root"
	// KindQoS is kubepods itself and its Burstable and BestEffort groups.
	KindQoS       Kind = "qos"
	KindPod       Kind = "pod"
	KindContainer Kind = "container"
	// KindRuntime is a container runtime's helper beside a container (conmon).
	KindRuntime Kind = "runtime"
	KindSlice   Kind = "slice"
	KindService Kind = "service"
	KindScope   Kind = "scope"
	// KindThrottlelab is throttlelab's own groups: throttlelab/RUN-ID/GROUP.
	KindThrottlelab Kind = "throttlelab"
	KindOther       Kind = "cgroup"
)

// Identity names a group as its owner knows it.
type Identity struct {
	Name        string          `json:"name"`
	Kind        Kind            `json:"group_kind"`
	QoS         cgroup.QoSClass `json:"qos,omitempty"`
	PodUID      string          `json:"pod_uid,omitempty"`
	Namespace   string          `json:"namespace,omitempty"`
	Pod         string          `json:"pod,omitempty"`
	Container   string          `json:"container,omitempty"`
	ContainerID string          `json:"container_id,omitempty"`
	Runtime     string          `json:"runtime,omitempty"`
	// Sandbox marks a pod's sandbox (pause) container: a container group of
	// a pod whose other containers the kubelet's log links name, that has
	// no link itself (the kubelet logs every container but the sandbox).
	// Unknown (false) where the links cannot be read.
	Sandbox bool `json:"sandbox,omitempty"`
}

// Kubelet reports whether the group's weight was set by the kubelet's (or
// throttlelab's, which follows it) mapping from a CPU request, so that it can
// be read back as a request in cores.
func (id Identity) Kubelet() bool {
	switch id.Kind {
	case KindPod, KindContainer:
		return id.PodUID != ""
	case KindQoS:
		return true
	case KindThrottlelab: // throttlelab/RUN-ID/GROUP; the two above are left alone
		return strings.Count(id.Name, "/") >= 2
	}
	return false
}

var (
	// kubepods, kubepods.slice, or a prefixed one (kubelet-kubepods.slice,
	// when the kubelet's cgroup root is /kubelet).
	kubepodsRe = regexp.MustCompile(`^(?:.*-)?kubepods(?:\.slice)?$`)
	// pod<uid> (cgroupfs driver) or ...-pod<uid_with_underscores>.slice
	// (systemd driver); static pods have a 32-digit hash for a UID.
	podRe = regexp.MustCompile(`pod([0-9a-fA-F]{8}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{12}|[0-9a-fA-F]{32})(?:\.slice)?$`)
	idRe  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// runtimePrefixes are the scope (systemd driver) or directory (cgroupfs)
// prefixes container runtimes give a container's group, most specific first.
var runtimePrefixes = []struct{ prefix, runtime string }{
	{"cri-containerd-", "containerd"},
	{"crio-conmon-", "conmon"},
	{"crio-", "cri-o"},
	{"docker-", "docker"},
	{"libpod-conmon-", "conmon"},
	{"libpod-", "podman"},
	{"nerdctl-", "nerdctl"},
}

// containerID splits a container group's last path element into runtime and
// container ID, or returns ok false.
func containerID(elem string) (runtime, id string, ok bool) {
	e := strings.TrimSuffix(elem, ".scope")
	for _, p := range runtimePrefixes {
		if rest, found := strings.CutPrefix(e, p.prefix); found && idRe.MatchString(rest) {
			return p.runtime, rest, true
		}
	}
	if idRe.MatchString(e) {
		return "", e, true
	}
	return "", "", false
}

// Identify names the group at cgroup path p. pods, if not nil, supplies
// Kubernetes pod and container names.
func Identify(p string, pods *PodNames) Identity {
	if p == "/" || p == "" {
		return Identity{Name: "/", Kind: KindRoot}
	}
	elems := strings.Split(strings.Trim(p, "/"), "/")
	for i, e := range elems {
		if kubepodsRe.MatchString(e) {
			return identifyKube(elems[i+1:], pods)
		}
		if e == "throttlelab" {
			return Identity{Name: strings.Join(elems[i:], "/"), Kind: KindThrottlelab}
		}
	}
	last := elems[len(elems)-1]
	if rt, id, ok := containerID(last); ok {
		if rt == "" && len(elems) > 1 {
			rt = elems[len(elems)-2] // cgroupfs: /docker/ID, /default/ID (containerd)
		}
		kind := KindContainer
		if rt == "conmon" {
			kind = KindRuntime
		}
		return Identity{Name: rt + " " + id[:12], Kind: kind, ContainerID: id, Runtime: rt}
	}
	switch filepath.Ext(last) {
	case ".slice":
		return Identity{Name: last, Kind: KindSlice}
	case ".service":
		return Identity{Name: last, Kind: KindService}
	case ".scope":
		return Identity{Name: last, Kind: KindScope}
	}
	return Identity{Name: p, Kind: KindOther}
}

// identifyKube names a group below kubepods from the path elements after it.
func identifyKube(elems []string, pods *PodNames) Identity {
	id := Identity{Name: "kubepods", Kind: KindQoS}
	podSeen := false
	for i, e := range elems {
		if m := podRe.FindStringSubmatch(e); m != nil && !podSeen {
			podSeen = true
			id.Kind, id.PodUID = KindPod, strings.ReplaceAll(strings.ToLower(m[1]), "_", "-")
			if id.QoS == "" {
				id.QoS = cgroup.Guaranteed
			}
			id.Name = "pod " + id.PodUID
			if pn, ok := pods.pod(id.PodUID); ok {
				id.Namespace, id.Pod = pn.Namespace, pn.Name
				id.Name = pn.Namespace + "/" + pn.Name
			}
			continue
		}
		if !podSeen {
			switch q := strings.TrimSuffix(e, ".slice"); {
			case q == "burstable" || strings.HasSuffix(q, "-burstable"):
				id.QoS, id.Name = cgroup.Burstable, "kubepods/burstable"
				continue
			case q == "besteffort" || strings.HasSuffix(q, "-besteffort"):
				id.QoS, id.Name = cgroup.BestEffort, "kubepods/besteffort"
				continue
			}
		}
		if podSeen && id.Kind == KindPod {
			if rt, cid, ok := containerID(e); ok {
				id.ContainerID, id.Runtime = cid, rt
				id.Kind = KindContainer
				if rt == "conmon" {
					id.Kind = KindRuntime
				}
				name := cid[:12]
				if c, ok := pods.container(cid); ok {
					id.Container, name = c, c
				} else if pods.named(id.Namespace, id.Pod) {
					id.Sandbox = true
					name += " (sandbox)"
				}
				if rt == "conmon" {
					name += " (conmon)"
				}
				id.Name += "/" + name
				continue
			}
		}
		// Anything else (a group made inside a container, say) keeps the
		// name of what holds it, with the rest of its path.
		id.Kind = KindOther
		id.Name += "/" + strings.Join(elems[i:], "/")
		return id
	}
	return id
}

// PodName is a pod's namespace and name.
type PodName struct{ Namespace, Name string }

// PodNames maps pod UIDs and container IDs to the names Kubernetes gave them,
// as the kubelet's log directories show them.
type PodNames struct {
	pods       map[string]PodName
	containers map[string]string
	// withNamed holds "NAMESPACE/POD" of the pods with a named container.
	withNamed map[string]bool
}

// NewPodNames returns an empty set of names, to fill with Add.
func NewPodNames() *PodNames {
	return &PodNames{pods: map[string]PodName{}, containers: map[string]string{}, withNamed: map[string]bool{}}
}

// Add records a pod (by UID, as in its cgroup path: lower case, dashes) and
// its containers' names by container ID (64 hex digits, without the
// runtime's prefix), as the Kubernetes API's pod status lists them.
func (p *PodNames) Add(uid string, pod PodName, containers map[string]string) {
	p.pods[strings.ToLower(uid)] = pod
	for id, name := range containers {
		p.containers[id] = name
	}
	if len(containers) > 0 {
		p.withNamed[pod.Namespace+"/"+pod.Name] = true
	}
}

// Merge adds o's names to p; o may be nil.
func (p *PodNames) Merge(o *PodNames) {
	if o == nil {
		return
	}
	maps.Copy(p.pods, o.pods)
	maps.Copy(p.containers, o.containers)
	maps.Copy(p.withNamed, o.withNamed)
}

// named reports whether a container of the pod namespace/pod is named.
func (p *PodNames) named(namespace, pod string) bool {
	return p != nil && pod != "" && p.withNamed[namespace+"/"+pod]
}

func (p *PodNames) pod(uid string) (PodName, bool) {
	if p == nil {
		return PodName{}, false
	}
	n, ok := p.pods[uid]
	return n, ok
}

func (p *PodNames) container(id string) (string, bool) {
	if p == nil {
		return "", false
	}
	n, ok := p.containers[id]
	return n, ok
}

// ReadPodNames reads the names of the pods and containers on this node from
// the kubelet's log directories under root: var/log/pods/NAMESPACE_POD_UID
// and the links var/log/containers/POD_NAMESPACE_CONTAINER-ID.log. Neither
// namespaces, pod names nor UIDs can hold an underscore, so the names split
// cleanly. A node without them (not a Kubernetes node) gives empty maps.
func ReadPodNames(root string) *PodNames {
	p := NewPodNames()
	if es, err := os.ReadDir(filepath.Join(root, "var/log/pods")); err == nil {
		for _, e := range es {
			f := strings.Split(e.Name(), "_")
			if len(f) == 3 {
				p.pods[f[2]] = PodName{Namespace: f[0], Name: f[1]}
			}
		}
	}
	if es, err := os.ReadDir(filepath.Join(root, "var/log/containers")); err == nil {
		for _, e := range es {
			f := strings.Split(strings.TrimSuffix(e.Name(), ".log"), "_")
			if len(f) != 3 {
				continue
			}
			i := strings.LastIndexByte(f[2], '-')
			if i < 0 || !idRe.MatchString(f[2][i+1:]) {
				continue
			}
			p.containers[f[2][i+1:]] = f[2][:i]
			p.withNamed[f[1]+"/"+f[0]] = true // POD_NAMESPACE_...
		}
	}
	return p
}

// Unknown reports whether a kubepods path names a pod or container that p does
// not know, so that the caller can read the log directories again.
func (p *PodNames) Unknown(id Identity) bool {
	if id.PodUID == "" {
		return false
	}
	if _, ok := p.pod(id.PodUID); !ok {
		return true
	}
	if id.ContainerID != "" && id.Kind == KindContainer {
		_, ok := p.container(id.ContainerID)
		return !ok
	}
	return false
}
