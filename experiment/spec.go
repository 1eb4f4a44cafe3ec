package experiment

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/units"
)

// APIVersion is the version of the experiment format this build reads.
const APIVersion = "throttlelab/v1alpha1"

// Experiment is an experiment spec: what to run, under which CPU settings, with
// which load, how often and in which order.
type Experiment struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Metadata   Metadata `yaml:"metadata"`
	Spec       Spec     `yaml:"spec"`

	warnings []Warning
	// file and lines locate fields for checks made after Parse (CheckCPUs).
	file  string
	lines map[string]int
}

// Warnings lists the values Parse found that take effect otherwise than they
// are written (see Warning); callers show them before running.
func (e *Experiment) Warnings() []Warning { return e.warnings }

// Metadata names and describes an experiment.
type Metadata struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
}

// Spec is the body of an experiment.
type Spec struct {
	// Workload is what each request asks the servers for.
	Workload Workload `yaml:"workload"`
	// Load is the load model; Loads several, each crossed with every config.
	Load  *Load  `yaml:"load,omitempty"`
	Loads []Load `yaml:"loads,omitempty"`
	// Balancer spreads requests over a config's instances (random, roundrobin,
	// ingress:K, least, p2c).
	Balancer loadgen.BalancerSpec `yaml:"balancer"`
	// Configs are the systems under test, each a set of instances.
	Configs []Config `yaml:"configs"`
	// Neighbours run beside the system under test in every run.
	Neighbours []Neighbour `yaml:"neighbours,omitempty"`
	Repeats    int         `yaml:"repeats"`
	// Order is interleaved (A B C A B C ..., the default: drift of a shared
	// machine hits every config alike) or grouped (A A B B C C).
	Order  string   `yaml:"order"`
	Warmup Duration `yaml:"warmup"`
	// Reference names the config the others are compared with (default: the
	// first one without a limit, else the first).
	Reference string `yaml:"reference"`
	// WeightMapping turns shares into a v2 cpu.weight: linear (classic runc) or
	// quadratic (newer runc and crun).
	WeightMapping string `yaml:"weightMapping"`
	Seed          uint64 `yaml:"seed"`
}

// Workload is what requests ask for.
type Workload struct {
	Request string          `yaml:"request"` // tile, burn or api
	Burn    loadgen.Burn    `yaml:"burn,omitempty"`
	Tiles   loadgen.TileSet `yaml:"tiles,omitempty"`
}

// Load is a load model, as `throttlelab load` takes it.
type Load struct {
	Name     string       `yaml:"name"`
	Mode     string       `yaml:"mode"`
	Workers  int          `yaml:"workers,omitempty"`
	Ramp     loadgen.Ramp `yaml:"ramp,omitempty"`
	Step     Duration     `yaml:"step,omitempty"`
	Rate     float64      `yaml:"rate,omitempty"`
	Arrivals string       `yaml:"arrivals,omitempty"`
	Sources  int          `yaml:"sources,omitempty"`
	On       Duration     `yaml:"on,omitempty"`
	Off      Duration     `yaml:"off,omitempty"`
	Duration Duration     `yaml:"duration,omitempty"`
	Requests int64        `yaml:"requests,omitempty"`
	Timeout  Duration     `yaml:"timeout,omitempty"`
}

// Config is one system under test: instances of the server with CPU settings.
type Config struct {
	Name      string `yaml:"name"`
	Instances int    `yaml:"instances"`
	CPU       CPU    `yaml:"cpu"`
	Server    Server `yaml:"server"`
	// Neighbours run beside this config's instances only (with the spec's
	// own neighbours): "alone" against "with a noisy neighbour" is two configs.
	Neighbours []Neighbour `yaml:"neighbours,omitempty"`
	// Pod puts all the config's instances under one pod-level CPU limit
	// (Kubernetes 1.34+ spec.resources): one quota over their sum, each
	// instance's own cpu settings inside it; nil is no pod-level limit.
	Pod *Pod `yaml:"pod,omitempty"`
}

// Pod is the pod-level resources of a config whose instances share one pod.
type Pod struct {
	// CPU is the pod's request and limit; its period is the instances'.
	// The limit is required (it is the pod's quota); period, burst and
	// cpuset are per instance only.
	CPU CPU `yaml:"cpu"`
}

// NeighboursOf returns the neighbours of a config's runs: the spec's, then
// the config's own.
func (e *Experiment) NeighboursOf(c Config) []Neighbour {
	return append(append([]Neighbour{}, e.Spec.Neighbours...), c.Neighbours...)
}

// CPU holds Kubernetes-style CPU settings of one instance.
type CPU struct {
	Request units.CPUQuantity `yaml:"request,omitempty"` // "250m", "0.25", "2"
	Limit   units.CPUQuantity `yaml:"limit,omitempty"`
	Period  Duration          `yaml:"period,omitempty"`
	Burst   Duration          `yaml:"burst,omitempty"`
	Cpuset  Cpuset            `yaml:"cpuset,omitempty"` // "0-1"
}

// Server is the concurrency of the server instances.
type Server struct {
	// GOMAXPROCS is host (the default: all host CPUs), N, automaxprocs (the
	// CPU limit rounded down, at least 1), go (the Go 1.25+ runtime's
	// default: rounded up, at least 2, at most the CPUs) or the deprecated
	// limit (rounded up, at least 1); see units.GOMAXPROCS.
	GOMAXPROCS units.GOMAXPROCS `yaml:"gomaxprocs"`
	Single     bool             `yaml:"single,omitempty"`
	CPUClock   *bool            `yaml:"cpuClock,omitempty"`
}

// Neighbour is a process beside the system under test.
type Neighbour struct {
	Name string `yaml:"name"`
	// Kind is noise (a CPU hog), burst (the periodic burst worker), probe (a
	// latency probe against the config's instances) or server (another server).
	Kind    string   `yaml:"kind"`
	Threads int      `yaml:"threads,omitempty"`
	Workers int      `yaml:"workers,omitempty"`
	Busy    Duration `yaml:"busy,omitempty"`
	Sleep   Duration `yaml:"sleep,omitempty"`
	Rate    float64  `yaml:"rate,omitempty"`
	// CPU is the neighbour's group; a probe has none (it runs in the load
	// generator).
	CPU CPU `yaml:"cpu,omitempty"`
}

// Duration is a time.Duration written as "100ms" in YAML.
type Duration struct{ time.Duration }

// UnmarshalYAML parses "100ms", "5s" and such with units.ParseDuration.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return errors.New("want a duration such as 100ms")
	}
	v, err := units.ParseDuration(n.Value)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalYAML writes the duration as "100ms".
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// IsZero lets omitempty leave zero durations out.
func (d Duration) IsZero() bool { return d.Duration == 0 }

// LoadFile reads and checks an experiment spec from a file.
func LoadFile(path string) (*Experiment, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b, path)
}

// MaxSpecBytes bounds a spec file: a real one is a few kilobytes.
const MaxSpecBytes = 1 << 20

// Parse reads an experiment spec strictly (unknown fields are errors), applies
// the defaults and checks every value against its bounds, so that nothing bad
// is found once runs have started. Every error is a *SpecError naming the
// file, line and field, on one line; values that Kubernetes would change
// (see Warning) are listed by Warnings.
func Parse(b []byte, file string) (*Experiment, error) {
	return parse(b, file, false)
}

func parse(b []byte, file string, legacy bool) (*Experiment, error) {
	if len(b) > MaxSpecBytes {
		return nil, &SpecError{File: file, Msg: fmt.Sprintf("%d bytes: a spec is at most %d", len(b), MaxSpecBytes)}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, yamlError(file, err)
	}
	if len(root.Content) == 0 {
		return nil, &SpecError{File: file, Msg: "empty: want an experiment spec (apiVersion: " + APIVersion + ", kind: Experiment, ...)"}
	}
	if se := checkNode(root.Content[0], reflect.TypeFor[Experiment](), ""); se != nil {
		se.File = file
		return nil, se
	}
	lines := map[string]int{}
	indexLines(&root, "", lines)
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var e Experiment
	if err := dec.Decode(&e); err != nil {
		return nil, yamlError(file, err)
	}
	if legacy {
		dropLegacyDefaults(&e, lines)
	}
	r := &resolver{file: file, lines: lines}
	if err := r.resolve(&e); err != nil {
		var fe *fieldError
		if errors.As(err, &fe) {
			return nil, &SpecError{File: file, Line: lineOf(lines, fe.path), Path: fe.path, Msg: fe.msg}
		}
		return nil, &SpecError{File: file, Msg: err.Error()}
	}
	e.warnings, e.file, e.lines = r.warnings, file, lines
	return &e, nil
}

// ParseSaved is Parse for a spec that a run or simulation saved with its
// results (record.ReadSpec reads it): the resolved spec, every default filled
// in. Files written by earlier versions carry defaults that no longer apply
// (workers: 1 on every load, a period on a probe); they are dropped before
// the spec is checked.
func ParseSaved(b []byte, file string) (*Experiment, error) {
	return parse(b, file, true)
}

// dropLegacyDefaults removes what earlier versions wrote as defaults where
// they do not apply, from the values and from the index of written fields.
func dropLegacyDefaults(e *Experiment, lines map[string]int) {
	forget := func(path string) {
		for p := range lines {
			if p == path || strings.HasPrefix(p, path+".") {
				delete(lines, p)
			}
		}
	}
	for i := range e.Spec.Loads {
		l := &e.Spec.Loads[i]
		if l.Mode != string(loadgen.ModeImage) && l.Workers == 1 {
			l.Workers = 0
			forget(fmt.Sprintf("spec.loads[%d].workers", i))
		}
	}
	probes := func(ns []Neighbour, path string) {
		for i := range ns {
			if ns[i].Kind == "probe" && ns[i].CPU == (CPU{Period: Duration{cgroup.DefaultPeriod * time.Microsecond}}) {
				ns[i].CPU = CPU{}
				forget(fmt.Sprintf("%s[%d].cpu", path, i))
			}
		}
	}
	probes(e.Spec.Neighbours, "spec.neighbours")
	for i := range e.Spec.Configs {
		probes(e.Spec.Configs[i].Neighbours, fmt.Sprintf("spec.configs[%d].neighbours", i))
	}
}

// indexLines records the line of every field by its path (spec.configs[1].cpu.limit).
func indexLines(n *yaml.Node, path string, lines map[string]int) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			indexLines(c, path, lines)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := join(path, n.Content[i].Value)
			lines[p] = n.Content[i].Line
			indexLines(n.Content[i+1], p, lines)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := path + "[" + strconv.Itoa(i) + "]"
			lines[p] = c.Line
			indexLines(c, p, lines)
		}
	}
}

// lineOf finds the line of a path, or of its nearest ancestor that is in the file
// (defaults have no line of their own).
func lineOf(lines map[string]int, path string) int {
	for p := path; p != ""; {
		if l, ok := lines[p]; ok {
			return l
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 1
}

// Kube returns the CPU settings in millicores and microseconds. Its errors
// are the period's and the burst's bounds (a spec that Parse resolved has none).
func (c CPU) Kube() (cgroup.KubeCPU, error) {
	k := cgroup.KubeCPU{RequestMilli: c.Request.Milli, LimitMilli: c.Limit.Milli}
	for _, d := range []struct {
		name string
		d    time.Duration
		max  time.Duration
	}{{"period", c.Period.Duration, time.Second}, {"burst", c.Burst.Duration, units.MaxCPUs * time.Second}} {
		if err := units.CheckDuration(d.name, d.d, 0, d.max); err != nil {
			if d.d >= time.Minute && d.d%time.Minute == 0 {
				// "900m" is millicores as a limit but minutes as a duration.
				return k, &fieldError{d.name, fmt.Sprintf("%s %s: a suffix m means minutes here, not millicores: the %s is a duration such as 20ms", d.name, d.d, d.name)}
			}
			return k, &fieldError{d.name, err.Error()}
		}
		if d.d%time.Microsecond != 0 {
			return k, &fieldError{d.name, fmt.Sprintf("%s %s: want whole microseconds (the kernel's unit)", d.name, d.d)}
		}
	}
	k.PeriodUsec = uint64(c.Period.Microseconds())
	k.BurstUsec = uint64(c.Burst.Microseconds())
	k.Cpus = c.Cpuset.String()
	return k, nil
}

// LoadConfig turns a load into the load generator's configuration (without
// targets, records or progress, which the runner adds).
func (e *Experiment) LoadConfig(l Load) loadgen.Config {
	w := e.Spec.Workload
	c := loadgen.Config{
		Mode: loadgen.Mode(l.Mode), Balancer: e.Spec.Balancer,
		Workload: loadgen.WorkloadSpec{Kind: loadgen.Kind(w.Request), Burn: w.Burn, Tiles: w.Tiles},
		Workers:  l.Workers, Ramp: l.Ramp, RampStep: l.Step.Duration, Rate: l.Rate, Arrivals: l.Arrivals,
		Sources: l.Sources, OnMean: l.On.Duration, OffMean: l.Off.Duration,
		Duration: l.Duration.Duration, Requests: l.Requests, Timeout: l.Timeout.Duration, Seed: e.Spec.Seed,
	}
	return c
}

// Marshal writes the experiment as YAML, every default filled in: what
// spec.yaml in a results directory holds.
func Marshal(e *Experiment) ([]byte, error) { return yaml.Marshal(e) }
