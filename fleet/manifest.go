package fleet

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/throttlelab/throttlelab/units"
)

// ManifestContainer is one container of a pod template in a manifest, with
// the CPU limit it proposes and where.
type ManifestContainer struct {
	File string `json:"file"`
	// Line is the line of the container's limits.cpu, or of its name when
	// it has no CPU limit.
	Line      int      `json:"line"`
	Workload  Workload `json:"workload"`
	Container string   `json:"container"`
	// LimitMilli is the proposed CPU limit (0: none).
	LimitMilli int64 `json:"limit_millicores"`
	// RequestMilli is the CPU request (0: none written), at RequestLine.
	RequestMilli int64 `json:"request_millicores,omitempty"`
	RequestLine  int   `json:"-"`
	// QoS is the pod's QoS class as the kubelet derives it from every
	// container's (and init container's) CPU and memory requests and
	// limits: Guaranteed, Burstable or BestEffort.
	QoS string `json:"qos,omitempty"`
	// PodLimitMilli is the pod-level CPU limit (Kubernetes 1.34+:
	// spec.resources.limits.cpu of the pod, one quota over all its
	// containers; 0: none), at PodLimitLine; PodRequestMilli is the
	// pod-level CPU request (0: none written), at PodRequestLine. Every
	// container of a pod carries its pod's.
	PodLimitMilli   int64 `json:"pod_limit_millicores,omitempty"`
	PodLimitLine    int   `json:"-"`
	PodRequestMilli int64 `json:"pod_request_millicores,omitempty"`
	PodRequestLine  int   `json:"-"`
	// parallelism are the container's runtime parallelism settings
	// (GOMAXPROCS, -XX:ActiveProcessorCount), for check --lint.
	parallelism []parallelismSetting
}

// ManifestError is bad input in a manifest: not YAML, not a Kubernetes
// object, a CPU quantity that does not parse.
type ManifestError struct {
	File string
	Line int
	Msg  string
}

func (e *ManifestError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// ReadManifests reads every manifest of paths: files, directories (their
// .yaml, .yml and .json files, recursively, in name order) and "-" for
// stdin. Documents may be many per file (---), and kind List (what kubectl
// get -o yaml prints) is opened. A namespace-less object is in
// defaultNamespace.
func ReadManifests(paths []string, stdin io.Reader, defaultNamespace string) ([]ManifestContainer, error) {
	files, err := readFiles(paths, stdin)
	if err != nil {
		return nil, err
	}
	var out []ManifestContainer
	for _, f := range files {
		cs, err := ParseManifest(f.name, f.body, defaultNamespace)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

// manifestFile is one file's name and bytes.
type manifestFile struct {
	name string
	body []byte
}

// readFiles reads paths: files, directories (their .yaml, .yml and .json
// files, recursively, in name order) and "-" for stdin.
func readFiles(paths []string, stdin io.Reader) ([]manifestFile, error) {
	var out []manifestFile
	for _, p := range paths {
		if p == "-" {
			b, err := io.ReadAll(stdin)
			if err != nil {
				return nil, fmt.Errorf("reading stdin: %w", err)
			}
			out = append(out, manifestFile{"<stdin>", b})
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil, &ManifestError{File: p, Msg: "cannot read it (" + errors.Unwrap(err).Error() + "): give files, directories or - for stdin"}
		}
		files := []string{p}
		if fi.IsDir() {
			files = nil
			filepath.WalkDir(p, func(f string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					switch strings.ToLower(filepath.Ext(f)) {
					case ".yaml", ".yml", ".json":
						files = append(files, f)
					}
				}
				return nil
			})
			sort.Strings(files)
			if len(files) == 0 {
				return nil, &ManifestError{File: p, Msg: "no .yaml, .yml or .json files in this directory"}
			}
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, &ManifestError{File: f, Msg: err.Error()}
			}
			out = append(out, manifestFile{f, b})
		}
	}
	return out, nil
}

// ParseManifest reads the containers of every pod template in one file's
// documents.
func ParseManifest(file string, b []byte, defaultNamespace string) ([]ManifestContainer, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out []ManifestContainer
	docs := 0
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &ManifestError{File: file, Msg: "not YAML: " + err.Error()}
		}
		if len(doc.Content) == 0 || (doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null") {
			continue // an empty document (helm writes them)
		}
		docs++
		cs, err := objectContainers(file, doc.Content[0], defaultNamespace)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	if docs == 0 {
		return nil, &ManifestError{File: file, Msg: "no Kubernetes object in it (empty)"}
	}
	return out, nil
}

// get returns the value of key in a mapping node, or nil.
func get(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// path follows keys down mapping nodes.
func path(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		n = get(n, k)
	}
	return n
}

func str(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// templates says where each kind keeps its pod spec.
var templates = map[string][]string{
	"Deployment":  {"spec", "template", "spec"},
	"StatefulSet": {"spec", "template", "spec"},
	"DaemonSet":   {"spec", "template", "spec"},
	"ReplicaSet":  {"spec", "template", "spec"},
	"Job":         {"spec", "template", "spec"},
	"CronJob":     {"spec", "jobTemplate", "spec", "template", "spec"},
	"Pod":         {"spec"},
}

func objectContainers(file string, obj *yaml.Node, ns string) ([]ManifestContainer, error) {
	if obj.Kind != yaml.MappingNode {
		return nil, &ManifestError{File: file, Line: obj.Line, Msg: "not a Kubernetes object (a YAML mapping with apiVersion and kind): check the file is a manifest"}
	}
	kind, api := str(get(obj, "kind")), str(get(obj, "apiVersion"))
	if kind == "" || api == "" {
		return nil, &ManifestError{File: file, Line: obj.Line, Msg: "not a Kubernetes object (no apiVersion or kind): check the file is a manifest"}
	}
	if strings.HasSuffix(kind, "List") {
		items := get(obj, "items")
		if items == nil || items.Kind != yaml.SequenceNode {
			if items == nil || (items.Kind == yaml.ScalarNode && items.Tag == "!!null") {
				return nil, nil
			}
			return nil, &ManifestError{File: file, Line: obj.Line, Msg: kind + ": items is not a list"}
		}
		var out []ManifestContainer
		for _, it := range items.Content {
			cs, err := objectContainers(file, it, ns)
			if err != nil {
				return nil, err
			}
			out = append(out, cs...)
		}
		return out, nil
	}
	where, ok := templates[kind]
	if !ok {
		return nil, nil // a Service, a ConfigMap...: no pods
	}
	name := str(path(obj, "metadata", "name"))
	if name == "" {
		return nil, &ManifestError{File: file, Line: obj.Line, Msg: kind + " without metadata.name"}
	}
	if n := str(path(obj, "metadata", "namespace")); n != "" {
		ns = n
	}
	spec := path(obj, where...)
	if spec == nil {
		return nil, &ManifestError{File: file, Line: obj.Line, Msg: fmt.Sprintf("%s %s: no %s", kind, name, strings.Join(where, "."))}
	}
	w := Workload{Namespace: ns, Kind: kind, Name: name}
	var out []ManifestContainer
	pod, err := podResources(file, kind+" "+name, spec)
	if err != nil {
		return nil, err
	}
	qos := qosClass(spec)
	for _, list := range []string{"containers", "initContainers"} {
		cl := get(spec, list)
		if cl == nil {
			continue
		}
		if cl.Kind != yaml.SequenceNode {
			return nil, &ManifestError{File: file, Line: cl.Line, Msg: fmt.Sprintf("%s %s: %s is not a list", kind, name, list)}
		}
		for _, c := range cl.Content {
			// An init container runs to its end before the others start,
			// except a sidecar (restartPolicy Always), which runs beside them.
			if list == "initContainers" && str(get(c, "restartPolicy")) != "Always" {
				continue
			}
			cn := get(c, "name")
			if str(cn) == "" {
				return nil, &ManifestError{File: file, Line: c.Line, Msg: fmt.Sprintf("%s %s: a container without a name", kind, name)}
			}
			mc := ManifestContainer{File: file, Line: cn.Line, Workload: w, Container: cn.Value, QoS: qos,
				PodLimitMilli: pod.limit, PodLimitLine: pod.limitLine, PodRequestMilli: pod.request, PodRequestLine: pod.requestLine}
			if req := path(c, "resources", "requests", "cpu"); req != nil {
				m, _, err := units.ParseMilliCPU(req.Value)
				if err != nil {
					return nil, &ManifestError{File: file, Line: req.Line, Msg: fmt.Sprintf("%s %s container %s: requests.cpu: %v", kind, name, cn.Value, err)}
				}
				mc.RequestMilli, mc.RequestLine = m, req.Line
			}
			if lim := path(c, "resources", "limits", "cpu"); lim != nil {
				m, _, err := units.ParseMilliCPU(lim.Value)
				if err != nil {
					return nil, &ManifestError{File: file, Line: lim.Line, Msg: fmt.Sprintf("%s %s container %s: limits.cpu: %v", kind, name, cn.Value, err)}
				}
				mc.LimitMilli, mc.Line = m, lim.Line
			}
			mc.parallelism = parallelismSettings(c)
			out = append(out, mc)
		}
	}
	return out, nil
}

// podCPU is a pod's own CPU resources (spec.resources) and their lines.
type podCPU struct {
	limit, request         int64
	limitLine, requestLine int
}

// podResources reads the pod-level CPU limit and request of a pod spec
// (spec.resources, Kubernetes 1.34+); what names the object in errors.
func podResources(file, what string, spec *yaml.Node) (podCPU, error) {
	var p podCPU
	for _, f := range []struct {
		key   string
		milli *int64
		line  *int
	}{{"limits", &p.limit, &p.limitLine}, {"requests", &p.request, &p.requestLine}} {
		n := path(spec, "resources", f.key, "cpu")
		if n == nil {
			continue
		}
		m, _, err := units.ParseMilliCPU(n.Value)
		if err != nil {
			return podCPU{}, &ManifestError{File: file, Line: n.Line, Msg: fmt.Sprintf("%s: pod-level resources.%s.cpu: %v", what, f.key, err)}
		}
		*f.milli, *f.line = m, n.Line
	}
	return p, nil
}
