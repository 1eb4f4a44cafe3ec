package loadgen

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestConfigBounds: every numeric setting has bounds, and a value beyond them
// is refused with the setting named (the spec points its error at that field).
func TestConfigBounds(t *testing.T) {
	rate := func(c Config) Config {
		c.Mode = ModeRate
		if c.Rate == 0 {
			c.Rate = 10
		}
		if c.Duration == 0 {
			c.Duration = time.Second
		}
		return c
	}
	for _, tt := range []struct {
		c     Config
		field string
		msg   string
	}{
		{Config{Mode: ModeImage, Workers: MaxWorkers + 1}, "workers", "workers 4097: want 1 to 4096"},
		{Config{Mode: ModeImage, Workers: -1}, "workers", "want 1 to 4096"},
		{Config{Mode: ModeRamp, Ramp: Ramp{From: 1, To: 1 << 30}, RampStep: time.Second}, "ramp", "<= 4096"},
		{Config{Mode: ModeRamp, Ramp: Ramp{From: 1, To: 2}, RampStep: time.Nanosecond}, "step", "ramp step 1ns: want 1ms to 1h"},
		{rate(Config{Rate: math.Inf(1)}), "rate", "finite"},
		{rate(Config{Rate: math.NaN()}), "rate", "finite"},
		{rate(Config{Rate: 2e6}), "rate", "want 0.001 to 1e+06"},
		{rate(Config{Rate: -1}), "rate", "must be positive"},
		{rate(Config{Duration: -time.Second}), "duration", "duration -1s: want 1ms to 24h"},
		{rate(Config{Duration: 48 * time.Hour}), "duration", "want 1ms to 24h"},
		{rate(Config{Requests: MaxRequests + 1}), "requests", "want 1 to"},
		{rate(Config{Timeout: -time.Second}), "timeout", "timeout -1s"},
		{rate(Config{Grace: 2 * time.Hour}), "grace", "grace 2h0m0s: want 0s to 1h"},
		{rate(Config{MaxInflight: MaxInflight + 1}), "max-inflight", "want 1 to"},
		{Config{Mode: ModeOnOff, Sources: MaxSources + 1, OnMean: time.Second, OffMean: time.Second, Duration: time.Second}, "sources", "want 1 to 4096"},
		{Config{Mode: ModeOnOff, Sources: 1, OnMean: time.Nanosecond, OffMean: time.Second, Duration: time.Second}, "on", "on 1ns: want 1ms to 1h"},
		{Config{Mode: ModeOnOff, Sources: 1, OnMean: time.Second, OffMean: 2 * time.Hour, Duration: time.Second}, "off", "want 1ms to 1h"},
		{rate(Config{Balancer: BalancerSpec{Kind: BalanceIngress, Ingress: 1_000_000_000_000}}), "balancer", "1 to 1024"},
		{rate(Config{Workload: WorkloadSpec{Kind: KindBurn, Burn: Burn{CPU: time.Hour}}}), "burn", "burn cpu 1h0m0s: want 1µs to 10s"},
	} {
		err := tt.c.Check()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(fe.Msg, tt.msg) {
			t.Errorf("%+v: %v, want a %s error with %q", tt.c, err, tt.field, tt.msg)
		}
	}
	if err := rate(Config{}).Check(); err != nil {
		t.Errorf("a good config: %v", err)
	}
}

func TestNotInMode(t *testing.T) {
	for _, tt := range []struct {
		m     Mode
		field string
		ok    bool
	}{
		{ModeImage, "workers", true}, {ModeRate, "workers", false}, {ModeRate, "rate", true}, {ModeOnOff, "rate", true},
		{ModeImage, "rate", false}, {ModeRamp, "step", true}, {ModeRate, "step", false}, {ModeOnOff, "arrivals", false},
		{ModeSequential, "sources", false}, {ModeSequential, "timeout", true}, {ModeImage, "duration", true},
	} {
		err := NotInMode(tt.m, tt.field)
		if (err == nil) != tt.ok {
			t.Errorf("NotInMode(%s, %s) = %v", tt.m, tt.field, err)
		}
	}
	if err := NotInMode(ModeRate, "workers"); err.Error() != "workers does not apply to mode rate: it sets the closed-loop workers of mode image" {
		t.Errorf("message: %v", err)
	}
}

func TestParseBurn(t *testing.T) {
	for in, want := range map[string]Burn{
		"cpu=5ms": {CPU: 5 * time.Millisecond}, "iterations=1000": {Iterations: 1000},
		"cpu=10s": {CPU: 10 * time.Second}, "iterations=10000000000": {Iterations: 1e10},
	} {
		got, err := ParseBurn(in)
		if err != nil || got != want || got.Query() != in || got.String() != in {
			t.Errorf("ParseBurn(%q) = %+v (%s), %v", in, got, got.Query(), err)
		}
	}
	for _, in := range []string{"cpu=0", "cpu=-1ms", "cpu=1h", "cpu=1ns", "cpu=soon", "iterations=0", "iterations=+5",
		"iterations=18446744073709551615", "iterations=10000000001", "iterations=-1", "cpu", "gpu=5ms"} {
		if b, err := ParseBurn(in); err == nil {
			t.Errorf("ParseBurn(%q) = %+v, want an error", in, b)
		}
	}
	// "" is a burn not given, which a burn request refuses.
	if b, err := ParseBurn(""); err != nil || !b.IsZero() {
		t.Errorf(`ParseBurn("") = %+v, %v: want the zero Burn`, b, err)
	}
	if err := (Config{Mode: ModeSequential, Requests: 1, Workload: WorkloadSpec{Kind: KindBurn}}).Check(); err == nil {
		t.Error("a burn request without a burn accepted")
	}
}
