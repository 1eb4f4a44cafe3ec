package experiment

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/workload"
)

// MaxInstances bounds the instances of one config: each is a process and a group.
const MaxInstances = 64

// resolve applies every default (this is the one place they live) and checks the
// spec, returning a fieldError that names the field at fault.
func (e *Experiment) resolve() error {
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
	if err := cgroup.CheckName(e.Metadata.Name); err != nil {
		return bad("metadata.name", "%v", err)
	}
	s := &e.Spec

	if s.Workload.Request == "" {
		s.Workload.Request = string(loadgen.KindTile)
	}
	switch loadgen.Kind(s.Workload.Request) {
	case loadgen.KindTile:
		if s.Workload.Tiles == "" {
			s.Workload.Tiles = "all"
		}
		cat, err := workload.DefaultCatalog()
		if err != nil {
			return err
		}
		if _, err := loadgen.SelectTiles(s.Workload.Tiles, cat, s.Seed); err != nil {
			return bad("spec.workload.tiles", "%v", err)
		}
	case loadgen.KindBurn:
		if s.Workload.Burn == "" {
			s.Workload.Burn = "cpu=5ms"
		}
		if _, err := loadgen.ParseBurn(s.Workload.Burn); err != nil {
			return bad("spec.workload.burn", "%v", err)
		}
	case loadgen.KindAPI:
	default:
		return bad("spec.workload.request", "%q: want tile, burn or api", s.Workload.Request)
	}

	if s.Balancer == "" {
		s.Balancer = "random"
	}
	if _, err := loadgen.ParseBalancer(s.Balancer, 1, 0); err != nil {
		return bad("spec.balancer", "%v", err)
	}
	if s.Repeats == 0 {
		s.Repeats = 1
	}
	if s.Repeats < 0 || s.Repeats > 1000 {
		return bad("spec.repeats", "%d: want 1 to 1000", s.Repeats)
	}
	if s.Order == "" {
		s.Order = "interleaved"
	}
	if s.Order != "interleaved" && s.Order != "grouped" {
		return bad("spec.order", "%q: want interleaved or grouped", s.Order)
	}
	if s.Warmup.Duration < 0 {
		return bad("spec.warmup", "must not be negative")
	}
	if s.WeightMapping == "" {
		s.WeightMapping = string(cgroup.WeightLinear)
	}
	if _, err := cgroup.SharesToWeight(1024, cgroup.WeightMapping(s.WeightMapping)); err != nil {
		return bad("spec.weightMapping", "%v", err)
	}
	if s.Seed == 0 {
		s.Seed = 1
	}

	if s.Load != nil && len(s.Loads) > 0 {
		return bad("spec.loads", "give load (one) or loads (several), not both")
	}
	if s.Load != nil {
		s.Loads, s.Load = []Load{*s.Load}, nil
		if err := e.resolveLoad(0, "spec.load"); err != nil {
			return err
		}
	} else {
		if len(s.Loads) == 0 {
			return bad("spec.load", "missing: say how to drive the servers (mode: image, ramp, rate, onoff, probe or sequential)")
		}
		for i := range s.Loads {
			if err := e.resolveLoad(i, fmt.Sprintf("spec.loads[%d]", i)); err != nil {
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

	if len(s.Configs) == 0 {
		return bad("spec.configs", "missing: give at least one config (instances and their cpu settings)")
	}
	names = map[string]bool{}
	for i := range s.Configs {
		c := &s.Configs[i]
		path := fmt.Sprintf("spec.configs[%d]", i)
		if err := cgroup.CheckName(c.Name); err != nil {
			return bad(path+".name", "%v", err)
		}
		if names[c.Name] {
			return bad(path+".name", "%q is used twice", c.Name)
		}
		names[c.Name] = true
		if c.Instances == 0 {
			c.Instances = 1
		}
		if c.Instances < 0 || c.Instances > MaxInstances {
			return bad(path+".instances", "%d: want 1 to %d", c.Instances, MaxInstances)
		}
		if err := resolveCPU(&c.CPU, path+".cpu", cgroup.WeightMapping(s.WeightMapping)); err != nil {
			return err
		}
		if c.Server.GOMAXPROCS == "" {
			c.Server.GOMAXPROCS = "host"
		}
		if g := c.Server.GOMAXPROCS; g != "host" && g != "limit" {
			if n, err := fmt.Sscan(g, new(int)); n != 1 || err != nil || strings.HasPrefix(g, "-") || g == "0" {
				return bad(path+".server.gomaxprocs", "%q: want host, limit or a positive number", g)
			}
		}
	}
	if s.Reference == "" {
		s.Reference = s.Configs[0].Name
		for _, c := range s.Configs {
			if c.CPU.Limit == "" {
				s.Reference = c.Name
				break
			}
		}
	}
	if !names[s.Reference] {
		return bad("spec.reference", "%q is not the name of a config", s.Reference)
	}

	for i := range s.Neighbours {
		if err := resolveNeighbour(&s.Neighbours[i], fmt.Sprintf("spec.neighbours[%d]", i), names, cgroup.WeightMapping(s.WeightMapping)); err != nil {
			return err
		}
	}
	for i := range s.Configs {
		// A config's neighbours share a namespace with the configs and the
		// spec's neighbours; two configs may each have one of the same name.
		own := maps.Clone(names)
		for j := range s.Configs[i].Neighbours {
			path := fmt.Sprintf("spec.configs[%d].neighbours[%d]", i, j)
			if err := resolveNeighbour(&s.Configs[i].Neighbours[j], path, own, cgroup.WeightMapping(s.WeightMapping)); err != nil {
				return err
			}
		}
	}
	return nil
}

// resolveNeighbour checks a neighbour and fills in its defaults; names holds
// the names taken so far.
func resolveNeighbour(n *Neighbour, path string, names map[string]bool, wm cgroup.WeightMapping) error {
	if err := cgroup.CheckName(n.Name); err != nil {
		return bad(path+".name", "%v", err)
	}
	if names[n.Name] {
		return bad(path+".name", "%q is already the name of a config or neighbour", n.Name)
	}
	names[n.Name] = true
	switch n.Kind {
	case "noise":
		if n.Threads == 0 {
			n.Threads = 1
		}
		if n.Threads < 0 {
			return bad(path+".threads", "must be positive")
		}
	case "burst":
		if n.Workers == 0 {
			n.Workers = 4
		}
		if n.Busy.Duration == 0 {
			n.Busy.Duration = 200 * time.Millisecond
		}
		if n.Sleep.Duration == 0 {
			n.Sleep.Duration = 2 * time.Second
		}
		if n.Workers < 0 || n.Busy.Duration < 0 || n.Sleep.Duration < 0 {
			return bad(path, "workers, busy and sleep must be positive")
		}
	case "probe":
		if n.Rate == 0 {
			n.Rate = loadgen.DefaultProbeRate
		}
		if n.Rate < 0 {
			return bad(path+".rate", "must be positive")
		}
	case "server":
	default:
		return bad(path+".kind", "%q: want noise, burst, probe or server", n.Kind)
	}
	if err := resolveCPU(&n.CPU, path+".cpu", wm); err != nil {
		return err
	}
	return nil
}

func (e *Experiment) resolveLoad(i int, path string) error {
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
	if l.Mode == string(loadgen.ModeRamp) {
		if l.Ramp == "" {
			l.Ramp = "1:8"
		}
		if l.Step.Duration == 0 {
			l.Step.Duration = 10 * time.Second
		}
		if _, _, err := loadgen.ParseRamp(l.Ramp); err != nil {
			return bad(path+".ramp", "%v", err)
		}
	}
	if l.Mode == string(loadgen.ModeOnOff) {
		if l.Sources == 0 {
			l.Sources = 64
		}
		if l.On.Duration == 0 {
			l.On.Duration = 100 * time.Millisecond
		}
		if l.Off.Duration == 0 {
			l.Off.Duration = time.Second
		}
	}
	if l.Mode == string(loadgen.ModeRate) || l.Mode == string(loadgen.ModeProbe) {
		if l.Arrivals == "" {
			l.Arrivals = "constant"
		}
	}
	if l.Timeout.Duration == 0 {
		l.Timeout.Duration = 30 * time.Second
	}
	if l.Workers == 0 {
		l.Workers = 1
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

func resolveCPU(c *CPU, path string, m cgroup.WeightMapping) error {
	if c.Period.Duration == 0 {
		c.Period.Duration = cgroup.DefaultPeriod * time.Microsecond
	}
	if c.Period.Duration%time.Microsecond != 0 || c.Burst.Duration%time.Microsecond != 0 || c.Burst.Duration < 0 {
		return bad(path, "period and burst must be whole microseconds, and burst not negative")
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
	return nil
}
