package experiment

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/units"
	"github.com/throttlelab/throttlelab/workload"
)

// Bounds of an experiment, besides those of its loads (loadgen's) and its
// CPU settings (units.MaxCPUs, the kernel's period range).
const (
	// MaxInstances bounds the instances of one config: each is a process and a group.
	MaxInstances = 64
	MaxRepeats   = 1000
	MaxConfigs   = 64
	MaxLoads     = 64
	// MaxNeighbours bounds each list of neighbours (the spec's, each config's).
	MaxNeighbours = 32
	// MaxRuns bounds configs x loads x repeats.
	MaxRuns = 10000
	// MaxNameLen bounds the names of the experiment, its configs and its
	// neighbours: the run's cgroup names add up to 15 characters to them, and
	// the kernel's limit here is 63.
	MaxNameLen = 48
	MaxWarmup  = time.Hour
	// MaxBusy and MaxSleep bound a burst neighbour's phases.
	MaxBusy  = time.Hour
	MaxSleep = time.Hour
	// DefaultWeightMapping is how shares become a v2 weight unless the spec says.
	DefaultWeightMapping = cgroup.WeightLinear
)

// resolver applies every default (this is the one place they live) and checks
// every value of a decoded spec, returning a fieldError that names the field at
// fault. lines holds the fields the file wrote, so that an explicit 0 is told
// from an absent field; warnings collects the values Kubernetes would change.
type resolver struct {
	file     string
	lines    map[string]int
	warnings []Warning
}

func (r *resolver) written(path string) bool {
	_, ok := r.lines[path]
	return ok
}

func (r *resolver) warn(path, format string, args ...any) {
	r.warnings = append(r.warnings, Warning{File: r.file, Line: lineOf(r.lines, path), Path: path, Msg: fmt.Sprintf(format, args...)})
}

// count defaults an unset count to def, refuses a written 0, and bounds it.
func (r *resolver) count(path string, v *int, def, lo, hi int) error {
	if *v == 0 {
		if r.written(path) {
			return bad(path, "0: want %d to %d (leave it out for %d)", lo, hi, def)
		}
		*v = def
	}
	if *v < lo || *v > hi {
		return bad(path, "%d: want %d to %d", *v, lo, hi)
	}
	return nil
}

// duration defaults an unset duration to def, refuses a written 0, and bounds it.
func (r *resolver) duration(path string, d *Duration, def, lo, hi time.Duration) error {
	if d.Duration == 0 {
		if r.written(path) {
			return bad(path, "0s: want %s to %s (leave it out for %s)", lo, hi, def)
		}
		d.Duration = def
	}
	if err := units.CheckDuration(last(path), d.Duration, lo, hi); err != nil {
		return bad(path, "%v", err)
	}
	return nil
}

// name checks the name of the experiment, a config or a neighbour.
func name(path, n string) error {
	if err := cgroup.CheckName(n); err != nil {
		return bad(path, "%v", err)
	}
	if len(n) > MaxNameLen {
		return bad(path, "%q is %d characters: at most %d (the run's cgroup names add a prefix and a suffix)", n, len(n), MaxNameLen)
	}
	return nil
}

func (r *resolver) resolve(e *Experiment) error {
	if e.APIVersion == "" {
		return bad("apiVersion", "missing: add apiVersion: %s", APIVersion)
	}
	if e.APIVersion != APIVersion {
		return bad("apiVersion", "%q is not a version this build reads: want %s", e.APIVersion, APIVersion)
	}
	if e.Kind != "Experiment" {
		return bad("kind", "%q: want Experiment", e.Kind)
	}
	if e.Metadata.Name == "" {
		return bad("metadata.name", "missing: every experiment needs a name (it names the results directory)")
	}
	if err := name("metadata.name", e.Metadata.Name); err != nil {
		return err
	}
	s := &e.Spec
	if err := r.workload(s); err != nil {
		return err
	}
	if _, err := s.Balancer.New(1, 0); err != nil {
		return bad("spec.balancer", "%v", err) // not after Parse: a balancer made in code
	}
	if err := r.count("spec.repeats", &s.Repeats, 1, 1, MaxRepeats); err != nil {
		return err
	}
	if s.Order == "" {
		s.Order = "interleaved"
	}
	if s.Order != "interleaved" && s.Order != "grouped" {
		return bad("spec.order", "%q: want interleaved or grouped", s.Order)
	}
	if err := units.CheckDuration("warmup", s.Warmup.Duration, 0, MaxWarmup); err != nil {
		return bad("spec.warmup", "%v", err)
	}
	if s.WeightMapping == "" {
		s.WeightMapping = string(DefaultWeightMapping)
	}
	if _, err := cgroup.SharesToWeight(1024, cgroup.WeightMapping(s.WeightMapping)); err != nil {
		return bad("spec.weightMapping", "%v", err)
	}
	if s.Seed == 0 {
		if r.written("spec.seed") {
			return bad("spec.seed", "0: want 1 or more (leave it out for 1)")
		}
		s.Seed = 1
	}
	if err := r.loads(e); err != nil {
		return err
	}
	if err := r.configs(e); err != nil {
		return err
	}
	if n := len(s.Configs) * len(s.Loads) * s.Repeats; n > MaxRuns {
		return bad("spec.repeats", "%d configs x %d loads x %d repeats is %d runs: at most %d", len(s.Configs), len(s.Loads), s.Repeats, n, MaxRuns)
	}
	return nil
}

func (r *resolver) workload(s *Spec) error {
	w := &s.Workload
	if w.Request == "" {
		w.Request = string(loadgen.KindTile)
	}
	notFor := func(field, what string) error {
		return bad("spec.workload."+field, "%s does not apply to request %s: it sets %s", field, w.Request, what)
	}
	switch loadgen.Kind(w.Request) {
	case loadgen.KindTile:
		if !w.Burn.IsZero() {
			return notFor("burn", "what a burn request asks for")
		}
		if w.Tiles.IsZero() {
			w.Tiles = loadgen.TileSet{Kind: loadgen.TilesAll}
		}
		cat, err := workload.DefaultCatalog()
		if err != nil {
			return err
		}
		if _, err := w.Tiles.Select(cat, s.Seed); err != nil {
			return bad("spec.workload.tiles", "%v", err)
		}
	case loadgen.KindBurn:
		if !w.Tiles.IsZero() {
			return notFor("tiles", "which tiles a tile request asks for")
		}
		if w.Burn.IsZero() {
			w.Burn = loadgen.Burn{CPU: 5 * time.Millisecond}
		}
	case loadgen.KindAPI:
		if !w.Tiles.IsZero() {
			return notFor("tiles", "which tiles a tile request asks for")
		}
		if !w.Burn.IsZero() {
			return notFor("burn", "what a burn request asks for")
		}
	default:
		return bad("spec.workload.request", "%q: want tile, burn or api", w.Request)
	}
	return nil
}

func (r *resolver) loads(e *Experiment) error {
	s := &e.Spec
	if s.Load != nil && len(s.Loads) > 0 {
		return bad("spec.loads", "give load (one) or loads (several), not both")
	}
	if s.Load != nil {
		s.Loads, s.Load = []Load{*s.Load}, nil
		if err := r.load(e, 0, "spec.load"); err != nil {
			return err
		}
	} else {
		if len(s.Loads) == 0 {
			return bad("spec.load", "missing: say how to drive the servers (mode: image, ramp, rate, onoff, probe or sequential)")
		}
		if len(s.Loads) > MaxLoads {
			return bad("spec.loads", "%d loads: at most %d", len(s.Loads), MaxLoads)
		}
		for i := range s.Loads {
			if err := r.load(e, i, fmt.Sprintf("spec.loads[%d]", i)); err != nil {
				return err
			}
		}
	}
	names := map[string]bool{}
	for i := range s.Loads {
		if names[s.Loads[i].Name] {
			return bad(fmt.Sprintf("spec.loads[%d].name", i), "%q is used twice", s.Loads[i].Name)
		}
		names[s.Loads[i].Name] = true
	}
	return nil
}

func (r *resolver) load(e *Experiment, i int, path string) error {
	l := &e.Spec.Loads[i]
	if l.Name == "" {
		l.Name = fmt.Sprintf("load%d", i)
	}
	if err := cgroup.CheckName(l.Name); err != nil {
		return bad(path+".name", "%v", err)
	}
	if l.Mode == "" {
		return bad(path+".mode", "missing: want image, ramp, rate, onoff, probe or sequential")
	}
	mode := loadgen.Mode(l.Mode)
	if !slices.Contains(loadgen.Modes, mode) {
		return bad(path+".mode", "mode %q: want one of %v", l.Mode, loadgen.Modes)
	}
	// Settings of other modes are refused, not ignored.
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"workers", l.Workers != 0}, {"ramp", !l.Ramp.IsZero()}, {"step", l.Step.Duration != 0}, {"rate", l.Rate != 0},
		{"arrivals", l.Arrivals != ""}, {"sources", l.Sources != 0}, {"on", l.On.Duration != 0}, {"off", l.Off.Duration != 0},
	} {
		if f.set || r.written(path+"."+f.name) {
			if err := loadgen.NotInMode(mode, f.name); err != nil {
				return bad(path+"."+f.name, "%v", err)
			}
		}
	}
	var err error
	switch mode {
	case loadgen.ModeImage:
		err = r.count(path+".workers", &l.Workers, 1, 1, loadgen.MaxWorkers)
	case loadgen.ModeRamp:
		if l.Ramp.IsZero() {
			l.Ramp = loadgen.Ramp{From: 1, To: 8}
		}
		err = r.duration(path+".step", &l.Step, 10*time.Second, loadgen.MinDuration, loadgen.MaxStep)
	case loadgen.ModeOnOff:
		err = r.count(path+".sources", &l.Sources, 64, 1, loadgen.MaxSources)
		if err == nil {
			err = r.duration(path+".on", &l.On, 100*time.Millisecond, loadgen.MinDuration, loadgen.MaxMean)
		}
		if err == nil {
			err = r.duration(path+".off", &l.Off, time.Second, loadgen.MinDuration, loadgen.MaxMean)
		}
	case loadgen.ModeRate, loadgen.ModeProbe:
		if l.Arrivals == "" {
			l.Arrivals = "constant"
		}
		if l.Rate == 0 && mode == loadgen.ModeProbe {
			if r.written(path + ".rate") {
				err = bad(path+".rate", "0: a probe needs a rate (leave it out for %g requests/s)", loadgen.DefaultProbeRate)
			}
			l.Rate = loadgen.DefaultProbeRate
		}
	}
	if err != nil {
		return err
	}
	if err := units.CheckRate(l.Rate); err != nil {
		return bad(path+".rate", "%v", err)
	}
	if l.Duration.Duration == 0 && r.written(path+".duration") {
		return bad(path+".duration", "0s: want %s to %s, or leave it out", loadgen.MinDuration, loadgen.MaxDuration)
	}
	if l.Requests == 0 && r.written(path+".requests") {
		return bad(path+".requests", "0: want 1 to %d, or leave it out", loadgen.MaxRequests)
	}
	if err := r.duration(path+".timeout", &l.Timeout, loadgen.DefaultTimeout, loadgen.MinDuration, loadgen.MaxTimeout); err != nil {
		return err
	}
	// The load generator's own rules, so that a spec accepts what `load` accepts;
	// they name the setting at fault, which points the error at its line.
	if err := e.LoadConfig(*l).Check(); err != nil {
		field := path
		var fe *loadgen.FieldError
		if errors.As(err, &fe) {
			field += "." + fe.Field
		}
		return bad(field, "%v", err)
	}
	return nil
}

func (r *resolver) configs(e *Experiment) error {
	s := &e.Spec
	wm := cgroup.WeightMapping(s.WeightMapping)
	if len(s.Configs) == 0 {
		return bad("spec.configs", "missing: give at least one config (instances and their cpu settings)")
	}
	if len(s.Configs) > MaxConfigs {
		return bad("spec.configs", "%d configs: at most %d", len(s.Configs), MaxConfigs)
	}
	names := map[string]bool{}
	for i := range s.Configs {
		c := &s.Configs[i]
		path := fmt.Sprintf("spec.configs[%d]", i)
		if err := name(path+".name", c.Name); err != nil {
			return err
		}
		if names[c.Name] {
			return bad(path+".name", "%q is used twice", c.Name)
		}
		names[c.Name] = true
		if err := r.count(path+".instances", &c.Instances, 1, 1, MaxInstances); err != nil {
			return err
		}
		if err := r.cpu(&c.CPU, path+".cpu", wm); err != nil {
			return err
		}
		if err := r.pod(c, path, wm); err != nil {
			return err
		}
		if why := c.Server.GOMAXPROCS.Deprecated(); why != "" {
			r.warn(path+".server.gomaxprocs", "%s", why)
		}
	}
	if s.Reference == "" {
		s.Reference = s.Configs[0].Name
		for _, c := range s.Configs {
			if c.CPU.Limit.IsZero() {
				s.Reference = c.Name
				break
			}
		}
	}
	if !names[s.Reference] {
		return bad("spec.reference", "%q is not the name of a config", s.Reference)
	}

	if len(s.Neighbours) > MaxNeighbours {
		return bad("spec.neighbours", "%d neighbours: at most %d", len(s.Neighbours), MaxNeighbours)
	}
	probes := 0
	for i := range s.Neighbours {
		if err := r.neighbour(&s.Neighbours[i], fmt.Sprintf("spec.neighbours[%d]", i), names, wm); err != nil {
			return err
		}
		if s.Neighbours[i].Kind == "probe" {
			probes++
		}
	}
	for i := range s.Configs {
		// A config's neighbours share a namespace with the configs and the
		// spec's neighbours; two configs may each have one of the same name.
		own := maps.Clone(names)
		path := fmt.Sprintf("spec.configs[%d].neighbours", i)
		if len(s.Configs[i].Neighbours) > MaxNeighbours {
			return bad(path, "%d neighbours: at most %d", len(s.Configs[i].Neighbours), MaxNeighbours)
		}
		n := probes
		for j := range s.Configs[i].Neighbours {
			nb := &s.Configs[i].Neighbours[j]
			p := fmt.Sprintf("%s[%d]", path, j)
			if err := r.neighbour(nb, p, own, wm); err != nil {
				return err
			}
			if nb.Kind == "probe" {
				if n++; n > 1 {
					return bad(p+".kind", "a second probe: a run takes one probe (with the spec's neighbours)")
				}
			}
		}
	}
	if probes > 1 {
		return bad("spec.neighbours", "%d probes: a run takes one", probes)
	}
	return nil
}

// neighbourFields are the settings that belong to some kinds of neighbour
// only, and what each sets.
var neighbourFields = []struct {
	name  string
	kinds []string
	what  string
	set   func(n *Neighbour) bool
}{
	{"threads", []string{"noise"}, "the spinning threads of a noise neighbour", func(n *Neighbour) bool { return n.Threads != 0 }},
	{"workers", []string{"burst"}, "the busy workers of a burst neighbour", func(n *Neighbour) bool { return n.Workers != 0 }},
	{"busy", []string{"burst"}, "the busy phase of a burst neighbour", func(n *Neighbour) bool { return n.Busy.Duration != 0 }},
	{"sleep", []string{"burst"}, "the sleep of a burst neighbour", func(n *Neighbour) bool { return n.Sleep.Duration != 0 }},
	{"rate", []string{"probe"}, "the request rate of a probe", func(n *Neighbour) bool { return n.Rate != 0 }},
	{"cpu", []string{"noise", "burst", "server"}, "the cgroup of a neighbour process; a probe runs in the load generator, outside the groups",
		func(n *Neighbour) bool { return n.CPU != (CPU{}) }},
}

// neighbour checks a neighbour and fills in its defaults; names holds the
// names taken so far.
func (r *resolver) neighbour(n *Neighbour, path string, names map[string]bool, wm cgroup.WeightMapping) error {
	if err := name(path+".name", n.Name); err != nil {
		return err
	}
	if names[n.Name] {
		return bad(path+".name", "%q is already the name of a config or neighbour", n.Name)
	}
	names[n.Name] = true
	if !slices.Contains([]string{"noise", "burst", "probe", "server"}, n.Kind) {
		return bad(path+".kind", "%q: want noise, burst, probe or server", n.Kind)
	}
	for _, f := range neighbourFields {
		if !slices.Contains(f.kinds, n.Kind) && (f.set(n) || r.written(path+"."+f.name)) {
			return bad(path+"."+f.name, "%s does not apply to a %s neighbour: it sets %s", f.name, n.Kind, f.what)
		}
	}
	switch n.Kind {
	case "noise":
		if err := r.count(path+".threads", &n.Threads, 1, 1, units.MaxCPUs); err != nil {
			return err
		}
	case "burst":
		if err := r.count(path+".workers", &n.Workers, 4, 1, units.MaxCPUs); err != nil {
			return err
		}
		if err := r.duration(path+".busy", &n.Busy, 200*time.Millisecond, time.Millisecond, MaxBusy); err != nil {
			return err
		}
		if n.Sleep.Duration == 0 && r.written(path+".sleep") {
			return bad(path+".sleep", "0s: a burst worker that never sleeps is a noise neighbour (kind: noise); want 1ms to %s", MaxSleep)
		}
		if err := r.duration(path+".sleep", &n.Sleep, 2*time.Second, time.Millisecond, MaxSleep); err != nil {
			return err
		}
	case "probe":
		if n.Rate == 0 {
			if r.written(path + ".rate") {
				return bad(path+".rate", "0: a probe needs a rate (leave it out for %g requests/s)", loadgen.DefaultProbeRate)
			}
			n.Rate = loadgen.DefaultProbeRate
		}
		if err := units.CheckRate(n.Rate); err != nil {
			return bad(path+".rate", "%v", err)
		}
		return nil // no group, no cpu
	}
	return r.cpu(&n.CPU, path+".cpu", wm)
}

// cpu checks a config's or neighbour's CPU settings, fills in the period, and
// warns where Kubernetes semantics change a value.
func (r *resolver) cpu(c *CPU, path string, m cgroup.WeightMapping) error {
	for _, q := range []struct {
		field string
		v     units.CPUQuantity
		zero  string
	}{
		{"request", c.Request, "requests nothing: leave request out"},
		{"limit", c.Limit, "is no limit to the kubelet, which ignores a zero limit: leave limit out for none"},
	} {
		if q.v.IsZero() {
			if r.written(path + "." + q.field) {
				return bad(path+"."+q.field, "empty: give a CPU quantity such as 250m, or leave %s out", q.field)
			}
			continue
		}
		if q.v.Milli <= 0 || q.v.Milli > units.MaxMilliCPU {
			if q.v.Milli != 0 {
				return bad(path+"."+q.field, "%s: want 1m to %d CPUs", q.v, units.MaxCPUs) // not after Parse: a quantity made in code
			}
			return bad(path+"."+q.field, "%s %s", q.v, q.zero)
		}
		if q.v.RoundedUp() {
			r.warn(path+"."+q.field, "%s is finer than a millicore: Kubernetes rounds it up to %s", q.v, units.FormatMilliCPU(q.v.Milli))
		}
	}
	const def = cgroup.DefaultPeriod * time.Microsecond
	if c.Period.Duration == 0 && r.written(path+".period") {
		return bad(path+".period", "0s: want 1ms to 1s (leave it out for %s)", def)
	}
	if c.Period.Duration == 0 {
		c.Period.Duration = def
	}
	if err := units.CheckDuration("period", c.Period.Duration, time.Millisecond, time.Second); err != nil {
		return bad(path+".period", "%v (the kernel's range)", err)
	}
	if c.Burst.Duration < 0 {
		return bad(path+".burst", "burst %s: must not be negative", c.Burst.Duration)
	}
	if c.Cpuset.IsZero() && r.written(path+".cpuset") {
		return bad(path+".cpuset", "empty: give CPUs such as 0-1, or leave cpuset out")
	}
	k, err := c.Kube()
	if err != nil {
		var fe *fieldError
		if errors.As(err, &fe) {
			return bad(path+"."+fe.path, "%s", fe.msg)
		}
		return bad(path, "%v", err)
	}
	if _, _, err := k.Settings(m); err != nil {
		field := path
		var fe *cgroup.FieldError
		if errors.As(err, &fe) {
			field += "." + fe.Field
		}
		return bad(field, "%v", err)
	}
	for _, w := range k.Changes() {
		r.warn(path+"."+w.Field, "%s", w.Msg)
	}
	return nil
}

// pod checks a config's pod-level cpu block as the API server checks
// spec.resources: a limit is required, burst and cpuset are per instance, the
// period is the instances',
// each instance's limit and the instances' summed requests fit in the pod's.
func (r *resolver) pod(c *Config, path string, m cgroup.WeightMapping) error {
	if c.Pod == nil {
		return nil
	}
	path += ".pod.cpu"
	p := &c.Pod.CPU
	for _, f := range []struct {
		field string
		set   bool
	}{{"burst", p.Burst.Duration != 0}, {"cpuset", !p.Cpuset.IsZero()}} {
		if f.set {
			return bad(path+"."+f.field, "not a pod-level setting: give %s in the config's own cpu block", f.field)
		}
	}
	if p.Limit.IsZero() && !r.written(path+".limit") {
		return bad(path+".limit", "missing: a pod block needs a CPU limit such as 2 (its quota over all instances), or leave pod out")
	}
	if p.Period.Duration != 0 && p.Period != c.CPU.Period { // a saved spec has it filled in
		return bad(path+".period", "%s differs from the instances' period %s: leave it out (the pod takes the instances' period)", p.Period.Duration, c.CPU.Period.Duration)
	}
	p.Period = c.CPU.Period // the kubelet gives the pod group the containers' period
	if err := r.cpu(p, path, m); err != nil {
		return err
	}
	if !c.CPU.Limit.IsZero() && c.CPU.Limit.Milli > p.Limit.Milli {
		return bad(path+".limit", "%s is below the instances' own limit %s: raise the pod limit or lower cpu.limit", p.Limit, c.CPU.Limit)
	}
	if !p.Request.IsZero() {
		if p.Request.Milli > p.Limit.Milli {
			return bad(path+".request", "%s is above the pod limit %s: lower it to at most the limit", p.Request, p.Limit)
		}
		if sum := c.CPU.Request.Milli * int64(c.Instances); sum > p.Request.Milli {
			return bad(path+".request", "%s is below the instances' requests summed (%s): raise it or lower cpu.request", p.Request, units.FormatMilliCPU(sum))
		}
	}
	if !c.CPU.Cpuset.IsZero() {
		return bad(path[:len(path)-len(".pod.cpu")]+".cpu.cpuset", "a cpuset inside a pod-level limit is not supported (the pod's nested groups have no cpuset of their own): drop the cpuset or the pod block")
	}
	// Where a backend does not apply it, say so rather than run without it.
	r.warn(path, "%s", PodUnapplied)
	return nil
}

// PodUnapplied says where a pod-level limit may not apply: the plan warns
// with it.
const PodUnapplied = "the pod-level limit needs Kubernetes 1.34+ (PodLevelResources) with the kubernetes backend, which refuses a cluster that drops it; the local backend and the simulator nest the groups"

// last is the last element of a path: spec.load.timeout -> timeout.
func last(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '.' {
			return path[i+1:]
		}
	}
	return path
}
