package loadgen

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/workload"
)

// Mode is a load model.
type Mode string

// Load modes.
const (
	// ModeImage: closed loop over a tile set, each tile once, checked against the
	// catalogue (and the whole image's checksum when all tiles are asked for).
	ModeImage Mode = "image"
	// ModeRamp: closed loop, workers from Ramp.From to Ramp.To, Step each.
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
	// Balancer: random (default), roundrobin, ingress:K, least, p2c.
	Balancer string
	Workload WorkloadSpec
	// Workers for closed-loop modes (image, and ramp's ceiling comes from Ramp).
	Workers int
	// RampFrom..RampTo workers, each for RampStep (ramp mode).
	RampFrom, RampTo int
	RampStep         time.Duration
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

// ParseRamp parses "A:B" worker counts.
func ParseRamp(s string) (from, to int, err error) {
	a, b, ok := strings.Cut(s, ":")
	from, err1 := strconv.Atoi(a)
	to, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || from < 1 || to < from {
		return 0, 0, fmt.Errorf("ramp %q: want FROM:TO workers with 1 <= FROM <= TO", s)
	}
	return from, to, nil
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
		return c, bad("target", "no targets: give at least one --target URL")
	}
	if c.Balancer == "" {
		c.Balancer = "random"
	}
	if c.Workload.Kind == "" {
		c.Workload.Kind = KindTile
	}
	switch c.Workload.Kind {
	case KindTile, KindAPI:
	case KindBurn:
		if _, err := ParseBurn(c.Workload.Burn); err != nil {
			return c, bad("burn", "%v", err)
		}
	default:
		return c, bad("request", "request %q: want tile, burn or api", c.Workload.Kind)
	}
	if _, err := ParseBalancer(c.Balancer, 1, 0); err != nil {
		return c, bad("balancer", "%v", err)
	}
	if c.Mode == ModeImage && c.Workload.Kind != KindTile {
		return c, bad("request", "mode image renders tiles: --request must be tile, not %s", c.Workload.Kind)
	}
	if c.Workers == 0 {
		c.Workers = 1
	}
	if c.Workers < 0 {
		return c, bad("workers", "workers %d: must be at least 1", c.Workers)
	}
	if c.Duration < 0 {
		return c, bad("duration", "duration %s: must not be negative", c.Duration)
	}
	if c.Requests < 0 {
		return c, bad("requests", "requests %d: must not be negative", c.Requests)
	}
	switch c.Mode {
	case ModeRamp:
		if c.RampFrom < 1 || c.RampTo < c.RampFrom {
			return c, bad("ramp", "ramp %d:%d: want FROM:TO with 1 <= FROM <= TO", c.RampFrom, c.RampTo)
		}
		if c.RampStep <= 0 {
			return c, bad("step", "ramp step %s: must be positive", c.RampStep)
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
		if c.Sources < 1 {
			return c, bad("sources", "sources %d: must be at least 1", c.Sources)
		}
		if c.OnMean <= 0 || c.OffMean <= 0 {
			return c, bad("on", "on %s, off %s: both means must be positive", c.OnMean, c.OffMean)
		}
		if c.Rate < 0 {
			return c, bad("rate", "rate %g: must be positive (or 0: back to back while on)", c.Rate)
		}
	}
	if c.Mode != ModeImage && c.Mode != ModeRamp && c.Duration == 0 && c.Requests == 0 {
		return c, bad("duration", "mode %s needs --duration or --requests to know when to stop", c.Mode)
	}
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Second
	}
	if c.Grace == 0 {
		c.Grace = 10 * time.Second
	}
	if c.MaxInflight == 0 {
		c.MaxInflight = 1000
	}
	if c.Timeout < 0 {
		return c, bad("timeout", "timeout %s: must be positive", c.Timeout)
	}
	if c.Grace < 0 {
		return c, bad("grace", "grace %s: must not be negative", c.Grace)
	}
	if c.MaxInflight < 0 {
		return c, bad("max-inflight", "max-inflight %d: must be positive", c.MaxInflight)
	}
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	return c, nil
}
