package loadgen

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/units"
	"github.com/throttlelab/throttlelab/workload"
)

// Mode is a load model.
type Mode string

// Load modes.
const (
	// ModeImage: closed loop over a tile set, each tile once, checked against the
	// catalogue (and the whole image's checksum when all tiles are asked for).
	ModeImage Mode = "image"
	// ModeRamp: closed loop, workers from Ramp.From to Ramp.To, RampStep each.
	ModeRamp Mode = "ramp"
	// ModeRate: open loop at Rate, constant or Poisson.
	ModeRate Mode = "rate"
	// ModeOnOff: Sources independent Markov on/off sources.
	ModeOnOff Mode = "onoff"
	// ModeProbe: a steady low-rate open-loop latency probe.
	ModeProbe Mode = "probe"
	// ModeSequential: one request after another.
	ModeSequential Mode = "sequential"
)

// Modes lists the modes, for help texts.
var Modes = []Mode{ModeImage, ModeRamp, ModeRate, ModeOnOff, ModeProbe, ModeSequential}

// DefaultProbeRate is the probe mode's rate when none is given.
const DefaultProbeRate = 10.0

// Config describes one load.
type Config struct {
	Mode Mode
	// Targets are base URLs of the instances ("http://127.0.0.1:8080").
	Targets []string
	// Balancer spreads requests over the targets (random if zero).
	Balancer BalancerSpec
	Workload WorkloadSpec
	// Workers for closed-loop modes (image, and ramp's ceiling comes from Ramp).
	Workers int
	// Ramp's workers, each step for RampStep (ramp mode).
	Ramp     Ramp
	RampStep time.Duration
	// Rate in requests per second (rate, probe) and Arrivals: constant or poisson.
	Rate     float64
	Arrivals string
	// Sources with exponential ON and OFF periods of these means (onoff).
	Sources     int
	OnMean      time.Duration
	OffMean     time.Duration
	Duration    time.Duration
	Requests    int64
	Timeout     time.Duration
	Grace       time.Duration
	MaxInflight int
	// NewConnection opens a connection per request instead of keeping them alive.
	NewConnection bool
	// NoVerify skips checking tile answers against the catalogue (checked by
	// default: each PNG is decoded and its pixels hashed).
	NoVerify bool
	Seed     uint64
	// Records receives requests.csv (nil: not written).
	Records io.Writer
	// Progress, if set, is called now and then with the work done and the total
	// (requests, or milliseconds for timed loads).
	Progress func(done, total int64)
	// Catalog is the tile catalogue (the built-in one if nil).
	Catalog *workload.Catalog
	// Clock and Doer replace real time and HTTP in tests.
	Clock Clock
	Doer  Doer
}

// Bounds of a load's settings. Each closed-loop worker and each on/off source
// is a goroutine with a connection of its own, and each ramp step a
// histogram; the time bounds keep schedules and timeouts within reason.
const (
	MaxWorkers     = 4096
	MaxSources     = 4096
	MaxRequests    = 1_000_000_000
	MaxInflight    = 1_000_000
	MaxDuration    = 24 * time.Hour
	MaxStep        = time.Hour
	MaxMean        = time.Hour // of an on or off period
	MaxTimeout     = time.Hour
	MaxGrace       = time.Hour
	MinDuration    = time.Millisecond // of a duration, step, on, off or timeout
	DefaultTimeout = 30 * time.Second
)

// Ramp is a ramp's worker counts: From workers in the first step, one more
// each step, To in the last. It is written "FROM:TO" in specs and flags.
type Ramp struct{ From, To int }

// ParseRamp parses "A:B" worker counts, 1 <= A <= B <= MaxWorkers; "" is a
// ramp not given (the zero Ramp). It is the one parser of ramps: specs and
// flags reach it through UnmarshalText.
func ParseRamp(s string) (Ramp, error) {
	if s == "" {
		return Ramp{}, nil
	}
	a, b, ok := strings.Cut(s, ":")
	from, err1 := strconv.Atoi(a)
	to, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || from < 1 || to < from || to > MaxWorkers {
		return Ramp{}, fmt.Errorf("ramp %q: want FROM:TO workers with 1 <= FROM <= TO <= %d", s, MaxWorkers)
	}
	return Ramp{From: from, To: to}, nil
}

// String writes the ramp as ParseRamp reads it.
func (r Ramp) String() string { return strconv.Itoa(r.From) + ":" + strconv.Itoa(r.To) }

// IsZero reports an unset ramp (and lets YAML's omitempty leave it out).
func (r Ramp) IsZero() bool { return r == Ramp{} }

// Steps is the number of steps: To-From+1.
func (r Ramp) Steps() int { return r.To - r.From + 1 }

// MarshalText writes the ramp as String does.
func (r Ramp) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText parses the ramp with ParseRamp.
func (r *Ramp) UnmarshalText(text []byte) error {
	v, err := ParseRamp(string(text))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Set parses the ramp of a flag (pflag.Value).
func (r *Ramp) Set(s string) error { return r.UnmarshalText([]byte(s)) }

// Type names the flag's value (pflag.Value).
func (r *Ramp) Type() string { return "FROM:TO" }

// modeFields names the settings that mean something in some modes only, and
// what each does there; the rest (duration, requests, timeout, ...) apply to
// every mode.
var modeFields = map[string]struct {
	modes []Mode
	what  string
}{
	"workers":      {[]Mode{ModeImage}, "the closed-loop workers of mode image"},
	"ramp":         {[]Mode{ModeRamp}, "the workers of mode ramp"},
	"step":         {[]Mode{ModeRamp}, "the length of each step of mode ramp"},
	"rate":         {[]Mode{ModeRate, ModeProbe, ModeOnOff}, "the request rate of modes rate, probe and onoff"},
	"arrivals":     {[]Mode{ModeRate, ModeProbe}, "the arrival process of modes rate and probe"},
	"sources":      {[]Mode{ModeOnOff}, "the sources of mode onoff"},
	"on":           {[]Mode{ModeOnOff}, "the mean ON period of mode onoff"},
	"off":          {[]Mode{ModeOnOff}, "the mean OFF period of mode onoff"},
	"max-inflight": {[]Mode{ModeRate, ModeProbe, ModeOnOff}, "the in-flight limit of the open-loop modes rate, probe and onoff"},
}

// NotInMode returns an error if setting field (named as FieldError names it)
// means nothing in mode m, saying which modes it is for; nil if it applies.
// The spec and the load command refuse such settings rather than ignore them.
func NotInMode(m Mode, field string) error {
	f, ok := modeFields[field]
	if !ok || slices.Contains(f.modes, m) {
		return nil
	}
	return bad(field, "%s does not apply to mode %s: it sets %s", field, m, f.what)
}

// FieldError is a bad load setting. Field names the setting as both the
// `throttlelab load` flag and the experiment spec field are named (rate,
// arrivals, duration, ...), so each caller can point at its own spelling of it.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Msg }

func bad(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Check reports whether c describes a load Run would accept, naming the field at
// fault. Targets are not needed for the check.
func (c Config) Check() error {
	if len(c.Targets) == 0 {
		c.Targets = []string{"http://check.invalid"}
	}
	_, err := c.withDefaults()
	return err
}

// withDefaults checks c and fills in defaults, naming the field at fault.
func (c Config) withDefaults() (Config, error) {
	ok := false
	for _, m := range Modes {
		ok = ok || c.Mode == m
	}
	if !ok {
		return c, bad("mode", "mode %q: want one of %v", c.Mode, Modes)
	}
	if len(c.Targets) == 0 && c.Doer == nil {
		return c, bad("target", "no targets: give at least one instance URL")
	}
	if c.Workload.Kind == "" {
		c.Workload.Kind = KindTile
	}
	switch c.Workload.Kind {
	case KindTile, KindAPI:
	case KindBurn:
		if err := c.Workload.Burn.check(); err != nil {
			return c, bad("burn", "%v", err)
		}
	default:
		return c, bad("request", "request %q: want tile, burn or api", c.Workload.Kind)
	}
	if _, err := c.Balancer.New(1, 0); err != nil {
		return c, bad("balancer", "%v", err)
	}
	if c.Mode == ModeImage && c.Workload.Kind != KindTile {
		return c, bad("request", "mode image renders tiles: the request must be tile, not %s", c.Workload.Kind)
	}
	if c.Workers == 0 {
		c.Workers = 1
	}
	if c.Workers < 0 || c.Workers > MaxWorkers {
		return c, bad("workers", "workers %d: want 1 to %d", c.Workers, MaxWorkers)
	}
	if c.Duration < 0 || c.Duration > MaxDuration || (c.Duration > 0 && c.Duration < MinDuration) {
		return c, bad("duration", "%v", units.CheckDuration("duration", c.Duration, MinDuration, MaxDuration))
	}
	if c.Requests < 0 || c.Requests > MaxRequests {
		return c, bad("requests", "requests %d: want 1 to %d", c.Requests, MaxRequests)
	}
	if err := units.CheckRate(c.Rate); err != nil {
		return c, bad("rate", "%v", err)
	}
	switch c.Mode {
	case ModeRamp:
		if c.Ramp.From < 1 || c.Ramp.To < c.Ramp.From || c.Ramp.To > MaxWorkers {
			return c, bad("ramp", "ramp %s: want FROM:TO with 1 <= FROM <= TO <= %d", c.Ramp, MaxWorkers)
		}
		if err := units.CheckDuration("ramp step", c.RampStep, MinDuration, MaxStep); err != nil {
			return c, bad("step", "%v", err)
		}
	case ModeRate, ModeProbe:
		if c.Mode == ModeProbe && c.Rate == 0 {
			c.Rate = DefaultProbeRate
		}
		if !(c.Rate > 0) {
			return c, bad("rate", "rate %g: must be positive", c.Rate)
		}
		if c.Arrivals == "" {
			c.Arrivals = "constant"
		}
		if c.Arrivals != "constant" && c.Arrivals != "poisson" {
			return c, bad("arrivals", "arrivals %q: want constant or poisson", c.Arrivals)
		}
	case ModeOnOff:
		if c.Sources < 1 || c.Sources > MaxSources {
			return c, bad("sources", "sources %d: want 1 to %d", c.Sources, MaxSources)
		}
		if err := units.CheckDuration("on", c.OnMean, MinDuration, MaxMean); err != nil {
			return c, bad("on", "%v", err)
		}
		if err := units.CheckDuration("off", c.OffMean, MinDuration, MaxMean); err != nil {
			return c, bad("off", "%v", err)
		}
	}
	if c.Mode != ModeImage && c.Mode != ModeRamp && c.Duration == 0 && c.Requests == 0 {
		return c, bad("duration", "mode %s needs a duration or a request count to know when to stop", c.Mode)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Grace == 0 {
		c.Grace = 10 * time.Second
	}
	if c.MaxInflight == 0 {
		c.MaxInflight = 1000
	}
	if err := units.CheckDuration("timeout", c.Timeout, MinDuration, MaxTimeout); err != nil {
		return c, bad("timeout", "%v", err)
	}
	if err := units.CheckDuration("grace", c.Grace, 0, MaxGrace); err != nil {
		return c, bad("grace", "%v", err)
	}
	if c.MaxInflight < 0 || c.MaxInflight > MaxInflight {
		return c, bad("max-inflight", "max-inflight %d: want 1 to %d", c.MaxInflight, MaxInflight)
	}
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	return c, nil
}
