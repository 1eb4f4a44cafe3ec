package fleet

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/units"
)

// MinLimitMilli is the smallest CPU limit the kernel enforces as written
// at the default 100 ms period: a quota under 1 ms is raised to 1 ms (the
// kernel refuses less, the kubelet rounds up), so 1m to 9m all mean 10m.
const MinLimitMilli = 10

// Finding is one thing check --lint finds in a manifest: what needs no
// measured demand to be wrong.
type Finding struct {
	File string `json:"file"`
	Line int    `json:"line"`
	// Name is NAMESPACE/KIND/NAME/CONTAINER, or the field of an experiment
	// spec.
	Name string `json:"name"`
	Msg  string `json:"message"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", f.File, f.Line, f.Name, f.Msg)
}

// Lint reads the manifests of paths (as ReadManifests does, experiment
// specs too) and returns what is wrong in them without any history: a CPU
// request above the limit, a limit under the kernel's minimum quota, a
// limit without a request, and in an experiment spec whatever its parser
// refuses (a burst above the quota among them), and a container whose
// GOMAXPROCS or -XX:ActiveProcessorCount (in env, JAVA_TOOL_OPTIONS,
// JDK_JAVA_OPTIONS, command or args) is above its limit's CPUs. Given the manifests before
// the change (base, nil for none), a workload whose pod QoS class changes
// is a finding too. It also counts what it read.
func Lint(paths []string, stdin io.Reader, defaultNamespace string, base []ManifestContainer) ([]Finding, LintSummary, error) {
	files, err := readFiles(paths, stdin)
	if err != nil {
		return nil, LintSummary{}, err
	}
	var out []Finding
	var all []ManifestContainer
	var sum LintSummary
	for _, f := range files {
		if isExperiment(f.body) {
			sum.Specs++
			_, err := experiment.Parse(f.body, f.name)
			var se *experiment.SpecError
			switch {
			case errors.As(err, &se):
				out = append(out, Finding{File: se.File, Line: se.Line, Name: se.Path, Msg: se.Msg})
			case err != nil:
				out = append(out, Finding{File: f.name, Name: "spec", Msg: err.Error()})
			}
			continue
		}
		ms, err := ParseManifest(f.name, f.body, defaultNamespace)
		if err != nil {
			return nil, LintSummary{}, err
		}
		all = append(all, ms...)
		out = append(out, lintParallelism(ms)...)
	}
	sum.Containers = len(all)
	out = append(out, LintContainers(all, base)...)
	sortFindings(out)
	return out, sum, nil
}

// LintSummary counts what Lint read: the containers of Kubernetes
// objects and the experiment specs.
type LintSummary struct{ Containers, Specs int }

// isExperiment says whether a file is a throttlelab experiment spec.
func isExperiment(b []byte) bool {
	var head struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if dec.Decode(&head) != nil {
		return false
	}
	return head.Kind == "Experiment" && strings.HasPrefix(head.APIVersion, "throttlelab/")
}

// LintContainers is Lint on containers already read.
func LintContainers(ms []ManifestContainer, base []ManifestContainer) []Finding {
	var out []Finding
	add := func(mc ManifestContainer, line int, format string, args ...any) {
		out = append(out, Finding{File: mc.File, Line: line, Name: mc.name(), Msg: fmt.Sprintf(format, args...)})
	}
	for _, mc := range ms {
		if mc.LimitMilli > 0 && mc.RequestMilli > mc.LimitMilli {
			add(mc, mc.RequestLine, "requests.cpu %s is above limits.cpu %s: the API server refuses it; give a request at most the limit", cpu(mc.RequestMilli), cpu(mc.LimitMilli))
		}
		if mc.LimitMilli > 0 && mc.LimitMilli < MinLimitMilli {
			add(mc, mc.Line, "limits.cpu %s is a quota of %.1fms per 100ms period, under the kernel's 1ms minimum: it is enforced as %s; give at least %s", cpu(mc.LimitMilli), float64(mc.LimitMilli)/10, cpu(MinLimitMilli), cpu(MinLimitMilli))
		}
		if mc.LimitMilli > 0 && mc.RequestLine == 0 {
			add(mc, mc.Line, "limits.cpu %s without requests.cpu: Kubernetes sets the request to the limit (%s reserved on the node): give requests.cpu", cpu(mc.LimitMilli), cpu(mc.LimitMilli))
		}
	}
	out = append(out, lintPods(ms)...)
	if base != nil {
		was := map[Workload]string{}
		for _, mc := range base {
			was[mc.Workload] = mc.QoS
		}
		seen := map[Workload]bool{}
		for _, mc := range ms {
			old, ok := was[mc.Workload]
			if !ok || seen[mc.Workload] || old == mc.QoS {
				continue
			}
			seen[mc.Workload] = true
			add(mc, mc.Line, "the pod's QoS class changes from %s to %s: an in-place resize cannot change it (the pods are replaced), and the node evicts and weighs them differently", old, mc.QoS)
		}
	}
	sortFindings(out)
	return out
}

// sortFindings orders findings by file and line.
func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].File != fs[j].File {
			return fs[i].File < fs[j].File
		}
		return fs[i].Line < fs[j].Line
	})
}

// WriteLint writes one line per finding (FILE:LINE: NAME: what is wrong)
// and a summary.
func WriteLint(w io.Writer, fs []Finding, sum LintSummary) error {
	for _, f := range fs {
		if _, err := fmt.Fprintln(w, f); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "lint: %d containers, %d experiment specs, %d findings\n", sum.Containers, sum.Specs, len(fs))
	return err
}

// qosClass is the QoS class of the pod spec node, as the kubelet derives
// it. Without pod-level resources: Guaranteed when every container (init
// containers too) has CPU and memory limits and requests equal to them (a
// request left out is the limit), BestEffort when none has any CPU or
// memory request or limit, Burstable otherwise. With pod-level CPU or
// memory resources (spec.resources, Kubernetes 1.34+; KEP-2837), they
// alone decide: Guaranteed when the pod has CPU and memory limits and its
// requests equal them, Burstable otherwise. A pod-level request left out
// is derived as the API server defaults it: the containers' requests
// summed when any container has one, else the pod-level limit.
func qosClass(spec *yaml.Node) string {
	if pr := get(spec, "resources"); podLevelSet(pr) {
		for _, res := range []string{"cpu", "memory"} {
			lim, req := str(path(pr, "limits", res)), str(path(pr, "requests", res))
			if lim == "" {
				return "Burstable"
			}
			if req == "" {
				if sum, ok := containerRequests(spec, res); ok {
					if l, err := parseQuantity(lim); err != nil || !sameFloat(sum, l) {
						return "Burstable"
					}
					continue
				}
				req = lim
			}
			if !sameQuantity(res, req, lim) {
				return "Burstable"
			}
		}
		return "Guaranteed"
	}
	guaranteed, some := true, false
	for _, list := range []string{"containers", "initContainers"} {
		cl := get(spec, list)
		if cl == nil || cl.Kind != yaml.SequenceNode {
			continue
		}
		for _, c := range cl.Content {
			for _, res := range []string{"cpu", "memory"} {
				lim, req := str(path(c, "resources", "limits", res)), str(path(c, "resources", "requests", res))
				if lim != "" || req != "" {
					some = true
				}
				if lim == "" || (req != "" && !sameQuantity(res, req, lim)) {
					guaranteed = false
				}
			}
		}
	}
	switch {
	case !some:
		return "BestEffort"
	case guaranteed:
		return "Guaranteed"
	}
	return "Burstable"
}

// podLevelSet says whether a pod's spec.resources sets a CPU or memory
// request or limit: then the pod's own resources decide its QoS class.
func podLevelSet(pr *yaml.Node) bool {
	for _, k := range []string{"limits", "requests"} {
		for _, res := range []string{"cpu", "memory"} {
			if str(path(pr, k, res)) != "" {
				return true
			}
		}
	}
	return false
}

// containerRequests is the pod's request of res derived from its
// containers' (each one's request, or its limit where only a limit is
// written), as KEP-753 sums them: the regular containers and sidecars
// summed, or an init container's own when that is larger. ok is false
// when no container has a request or limit of res (then a pod-level
// request defaults to the pod-level limit).
func containerRequests(spec *yaml.Node, res string) (sum float64, ok bool) {
	var running, initMax float64
	for _, list := range []string{"containers", "initContainers"} {
		cl := get(spec, list)
		if cl == nil || cl.Kind != yaml.SequenceNode {
			continue
		}
		for _, c := range cl.Content {
			q := str(path(c, "resources", "requests", res))
			if q == "" {
				q = str(path(c, "resources", "limits", res))
			}
			if q == "" {
				continue
			}
			v, err := parseQuantity(q)
			if err != nil {
				continue
			}
			ok = true
			if list == "initContainers" && str(get(c, "restartPolicy")) != "Always" {
				initMax = max(initMax, v)
				continue
			}
			running += v
		}
	}
	return max(running, initMax), ok
}

func sameFloat(x, y float64) bool {
	return x == y || math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y))
}

// sameQuantity compares two Kubernetes quantities of a resource by value
// (1 and 1000m, 1Gi and 1024Mi are the same); ones that do not parse are
// compared as written.
func sameQuantity(res, a, b string) bool {
	if res == "cpu" {
		x, _, err1 := units.ParseMilliCPU(a)
		y, _, err2 := units.ParseMilliCPU(b)
		if err1 == nil && err2 == nil {
			return x == y
		}
		return a == b
	}
	x, err1 := parseQuantity(a)
	y, err2 := parseQuantity(b)
	if err1 != nil || err2 != nil {
		return a == b
	}
	return sameFloat(x, y)
}

// quantitySuffixes are Kubernetes' binary and decimal quantity suffixes.
var quantitySuffixes = []struct {
	s string
	f float64
}{
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"Pi", 1 << 50}, {"Ei", 1 << 60},
	{"n", 1e-9}, {"u", 1e-6}, {"m", 1e-3}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"E", 1e18},
}

// parseQuantity reads a Kubernetes quantity (128Mi, 1G, 1e9, 0.5) as a
// number.
func parseQuantity(s string) (float64, error) {
	for _, q := range quantitySuffixes {
		if n, ok := strings.CutSuffix(s, q.s); ok && n != "" {
			v, err := strconv.ParseFloat(n, 64)
			if err != nil {
				return 0, err
			}
			return v * q.f, nil
		}
	}
	return strconv.ParseFloat(s, 64)
}

// lintParallelism finds the containers whose runtime is told to run more
// threads at once than their CPU limit gives cores: GOMAXPROCS in env,
// -XX:ActiveProcessorCount in JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS, command
// or args (read with the container: ManifestContainer.parallelism). Each
// such thread is runnable work the quota throttles.
func lintParallelism(ms []ManifestContainer) []Finding {
	var out []Finding
	for _, mc := range ms {
		if mc.LimitMilli <= 0 {
			continue
		}
		allowed := int((mc.LimitMilli + 999) / 1000)
		lim := units.FormatMilliCPU(mc.LimitMilli)
		for _, s := range mc.parallelism {
			if s.value > allowed {
				out = append(out, Finding{File: mc.File, Line: s.line, Name: mc.name(),
					Msg: fmt.Sprintf("%s=%d is above limits.cpu %s (%d CPU): the runtime runs %d threads at once on a quota of %s, and throttles; set %s=%d", s.name, s.value, lim, allowed, s.value, lim, s.name, allowed)})
			}
		}
	}
	return out
}

// parallelismSetting is one runtime parallelism setting in a container.
type parallelismSetting struct {
	name  string // GOMAXPROCS or -XX:ActiveProcessorCount
	value int
	line  int
}

// parallelismSettings reads a container's GOMAXPROCS and
// -XX:ActiveProcessorCount settings (values that are not positive
// integers are the runtime's to refuse, not a finding here).
func parallelismSettings(c *yaml.Node) []parallelismSetting {
	var out []parallelismSetting
	const apc = "-XX:ActiveProcessorCount="
	javaFlags := func(s string, line int) {
		for _, w := range strings.Fields(s) {
			if v, ok := strings.CutPrefix(w, apc); ok {
				if n, err := strconv.Atoi(v); err == nil && n > 0 {
					out = append(out, parallelismSetting{"-XX:ActiveProcessorCount", n, line})
				}
			}
		}
	}
	if env := get(c, "env"); env != nil && env.Kind == yaml.SequenceNode {
		for _, e := range env.Content {
			v := get(e, "value")
			switch str(get(e, "name")) {
			case "GOMAXPROCS":
				if n, err := strconv.Atoi(strings.TrimSpace(str(v))); err == nil && n > 0 {
					out = append(out, parallelismSetting{"GOMAXPROCS", n, v.Line})
				}
			case "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS":
				if v != nil {
					javaFlags(str(v), v.Line)
				}
			}
		}
	}
	for _, key := range []string{"command", "args"} {
		if l := get(c, key); l != nil && l.Kind == yaml.SequenceNode {
			for _, a := range l.Content {
				javaFlags(str(a), a.Line)
			}
		}
	}
	return out
}
