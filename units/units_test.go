package units

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseMilliCPU(t *testing.T) {
	tests := []struct {
		in        string
		want      int64
		roundedUp bool
		wantErr   string
	}{
		{"250m", 250, false, ""}, {"0.25", 250, false, ""}, {"2", 2000, false, ""}, {"1.5", 1500, false, ""},
		{".5", 500, false, ""}, {"0", 0, false, ""}, {"0.0001", 1, true, ""}, {"0.2501", 251, true, ""},
		{"0.2500", 250, false, ""}, {"1000m", 1000, false, ""}, {"4096", 4096000, false, ""}, {"4096000m", 4096000, false, ""},
		{"5.", 5000, false, ""}, {" 2 ", 2000, false, ""},
		{"", 0, false, "want millicores"}, {"-1", 0, false, "want millicores"}, {"-250m", 0, false, "want millicores"},
		{"+1", 0, false, "want millicores"}, {"+250m", 0, false, "want millicores"},
		{"m", 0, false, "want millicores"}, {"1.5m", 0, false, "want millicores"}, {"abc", 0, false, "want millicores"},
		{"1e3", 0, false, "want millicores"}, {"1.-5", 0, false, "want millicores"}, {".", 0, false, "want millicores"},
		{"1k", 0, false, "want millicores"}, {"100u", 0, false, "want millicores"},
		// The overflows: refused, not wrapped.
		{"100000000000", 0, false, "more than 4096 CPUs"}, {"99999999999999999m", 0, false, "more than 4096 CPUs"},
		{"4096.001", 0, false, "more than 4096 CPUs"}, {"4097", 0, false, "more than 4096 CPUs"},
		{"99999999999999999999999", 0, false, "more than 4096 CPUs"}, {"4096000001m", 0, false, "more than 4096 CPUs"},
	}
	for _, tt := range tests {
		got, r, err := ParseMilliCPU(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseMilliCPU(%q) = %d, %v; want an error with %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want || r != tt.roundedUp {
			t.Errorf("ParseMilliCPU(%q) = %d, %v, %v; want %d, %v", tt.in, got, r, err, tt.want, tt.roundedUp)
		}
	}
}

func TestFormatMilliCPU(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 250: "250m", 2000: "2", 1500: "1500m"} {
		if got := FormatMilliCPU(in); got != want {
			t.Errorf("FormatMilliCPU(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"100ms": 100 * time.Millisecond, "0": 0, "1.5s": 1500 * time.Millisecond, "250us": 250 * time.Microsecond, "-1s": -time.Second} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "soon", "5", "1x", "99999999999h", "1.2.3s"} {
		if _, err := ParseDuration(in); err == nil || !strings.Contains(err.Error(), "not a duration") || !strings.Contains(err.Error(), "100ms") {
			t.Errorf("ParseDuration(%q): %v, want a not-a-duration error", in, err)
		}
	}
}

func TestCheckDuration(t *testing.T) {
	err := CheckDuration("period", -100*time.Millisecond, time.Millisecond, time.Second)
	if err == nil || err.Error() != "period -100ms: want 1ms to 1s" {
		t.Errorf("got %v", err)
	}
	if err := CheckDuration("warmup", time.Hour, 0, time.Hour); err != nil {
		t.Errorf("the upper bound is allowed: %v", err)
	}
	if err := CheckDuration("d", 25*time.Hour, time.Millisecond, 24*time.Hour); err == nil || !strings.HasSuffix(err.Error(), "want 1ms to 24h") {
		t.Errorf("got %v", err)
	}
}

func TestRates(t *testing.T) {
	for in, want := range map[string]float64{"200": 200, "0.5": 0.5, "1e3": 1000, "0": 0, "1e6": 1e6} {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"inf", "+Inf", "NaN", "-1", "lots", "", "1e7", "0.0001", "0x10p0"} {
		if r, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) = %v, want an error", in, r)
		}
	}
	for _, r := range []float64{math.Inf(1), math.NaN(), -3, 2e6} {
		if CheckRate(r) == nil {
			t.Errorf("CheckRate(%v) accepted", r)
		}
	}
}

func TestGOMAXPROCS(t *testing.T) {
	for _, in := range []string{"host", "automaxprocs", "go", "limit", "1", "16", "4096"} {
		p, err := ParseGOMAXPROCS(in)
		if err != nil || p.String() != in {
			t.Errorf("ParseGOMAXPROCS(%q) = %v, %v", in, p, err)
		}
	}
	if p, err := ParseGOMAXPROCS(""); err != nil || p != GOMAXPROCSHost {
		t.Errorf("empty: %v %v", p, err)
	}
	for _, in := range []string{"4abc", "0x10", "0", "-2", "+4", "4.0", " 4", "4097", "99999999999999999999", "lots", "Host", "Go", "automax", "ceil"} {
		if p, err := ParseGOMAXPROCS(in); err == nil {
			t.Errorf("ParseGOMAXPROCS(%q) = %v, want an error", in, p)
		}
	}
	var p GOMAXPROCS
	if err := p.UnmarshalText([]byte("8")); err != nil || p.Fixed() != 8 {
		t.Errorf("UnmarshalText: %v %v", p, err)
	}
	if _, err := FixedGOMAXPROCS(0); err == nil {
		t.Error("FixedGOMAXPROCS(0) accepted")
	}
}

// The server's and the simulator's resolution: host 16 CPUs, 8 in the
// affinity mask or cpuset.
func TestGOMAXPROCSResolve(t *testing.T) {
	tests := []struct {
		spec  string
		limit float64
		want  int
	}{
		{"host", 0, 16}, {"host", 1, 16}, {"host", 0.25, 16}, {"3", 0, 3}, {"3", 1, 3},
		// automaxprocs: the quota rounded down, at least 1; all the CPUs it
		// may use without one. It does not cap at the affinity mask.
		{"automaxprocs", 0.25, 1}, {"automaxprocs", 1, 1}, {"automaxprocs", 1.5, 1}, {"automaxprocs", 2.9, 2},
		{"automaxprocs", 1.9999999999, 2}, {"automaxprocs", 12, 12}, {"automaxprocs", 0, 8}, {"automaxprocs", math.NaN(), 8},
		// go (Go 1.25+): rounded up, at least 2, at most the affinity mask.
		{"go", 0.25, 2}, {"go", 1, 2}, {"go", 1.5, 2}, {"go", 2.5, 3}, {"go", 2.0000000001, 2}, {"go", 64, 8}, {"go", 0, 8},
		// limit (deprecated): rounded up, at least 1, at most the mask.
		{"limit", 1, 1}, {"limit", 1.5, 2}, {"limit", 0.1, 1}, {"limit", 2, 2}, {"limit", 2.0000000001, 2},
		{"limit", 64, 8}, {"limit", 0, 8}, {"limit", math.Inf(1), 8}, {"limit", math.NaN(), 8},
	}
	for _, tt := range tests {
		p, err := ParseGOMAXPROCS(tt.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got, src := p.Resolve(16, 8, tt.limit); got != tt.want || src == "" {
			t.Errorf("%s.Resolve(16, 8, %v) = %d (%s), want %d", tt.spec, tt.limit, got, src, tt.want)
		}
	}
	// The go policy on one CPU: 1, not 2 (the runtime never exceeds the
	// CPUs it may use).
	if got, _ := GOMAXPROCSGo.Resolve(1, 1, 0.5); got != 1 {
		t.Errorf("go on one CPU = %d, want 1", got)
	}
	if GOMAXPROCSLimit.Deprecated() == "" || GOMAXPROCSGo.Deprecated() != "" || GOMAXPROCSAutomaxprocs.Deprecated() != "" {
		t.Error("only limit is deprecated")
	}
}

func FuzzParseMilliCPU(f *testing.F) {
	for _, s := range []string{"250m", "0.25", "2", "4096", "0.0001", "99999999999999999m", "1e3", ".", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, r, err := ParseMilliCPU(s)
		if err != nil {
			if m != 0 || strings.Contains(err.Error(), "\n") {
				t.Fatalf("ParseMilliCPU(%q) = %d, %v", s, m, err)
			}
			return
		}
		if m < 0 || m > MaxMilliCPU {
			t.Fatalf("ParseMilliCPU(%q) = %d: out of bounds", s, m)
		}
		// What it writes back reads back the same, exactly.
		if again, r2, err := ParseMilliCPU(FormatMilliCPU(m)); err != nil || again != m || r2 {
			t.Fatalf("%q -> %d -> %q -> %d, %v, %v", s, m, FormatMilliCPU(m), again, r2, err)
		}
		_ = r
	})
}

// TestCPUQuantityKeepsItsText: a parsed quantity holds its millicores and
// the rounding, and is written back as it was written; "" is no quantity.
func TestCPUQuantityKeepsItsText(t *testing.T) {
	for _, tt := range []struct {
		in      string
		milli   int64
		rounded bool
	}{{"0.5", 500, false}, {"500m", 500, false}, {"2", 2000, false}, {"0.0001", 1, true}} {
		var q CPUQuantity
		if err := q.UnmarshalText([]byte(tt.in)); err != nil || q.Milli != tt.milli || q.RoundedUp() != tt.rounded || q.String() != tt.in {
			t.Errorf("%s: %+v (%q), %v: want %d millicores, rounded %v", tt.in, q, q.String(), err, tt.milli, tt.rounded)
		}
	}
	if q, err := ParseCPUQuantity(""); err != nil || !q.IsZero() || q.String() != "" {
		t.Errorf(`"" = %+v, %v: want no quantity`, q, err)
	}
	if q := Millicores(1500); q.String() != "1500m" || q.Cores() != 1.5 || q.IsZero() {
		t.Errorf("Millicores(1500) = %+v (%q)", q, q.String())
	}
	if _, err := ParseCPUQuantity("1.5m"); err == nil {
		t.Error("1.5m accepted")
	}
}
