package experiment

import (
	"errors"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// hostile is a spec with one line to replace: each hostile case is one
// value written where the good one was.
const hostile = `apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata: {name: h}
spec:
  workload: {request: burn}
  load:
    mode: rate
    rate: 10
    duration: 2s
  configs:
    - name: a
      cpu:
        limit: 500m
  neighbours:
    - name: hog
      kind: noise
`

// TestHostileSpecs: every value the issue found slipping through, and its
// kin, is refused at parse time with one line naming file, line and field.
func TestHostileSpecs(t *testing.T) {
	tests := []struct {
		name, from, to, want string
	}{
		{"limit overflows the quota", "limit: 500m", "limit: 100000000000", `h.yaml:13: spec.configs[0].cpu.limit: cpu quantity "100000000000": more than 4096 CPUs`},
		{"millicores overflow the shares", "limit: 500m", "limit: 99999999999999999m", `h.yaml:13: spec.configs[0].cpu.limit: cpu quantity "99999999999999999m": more than 4096 CPUs`},
		{"request overflows", "limit: 500m", "request: 5000", `spec.configs[0].cpu.request: cpu quantity "5000": more than 4096 CPUs`},
		{"huge cpuset", "limit: 500m", `cpuset: "0-10000000"`, `h.yaml:13: spec.configs[0].cpu.cpuset: cpu list "0-10000000": cpu 10000000: CPUs are numbered 0 to 4095`},
		{"cpuset past the last CPU", "limit: 500m", `cpuset: "4096"`, "CPUs are numbered 0 to 4095"},
		{"instances 0", "    - name: a\n", "    - name: a\n      instances: 0\n", "h.yaml:12: spec.configs[0].instances: 0: want 1 to 64 (leave it out for 1)"},
		{"repeats 0", "spec:\n", "spec:\n  repeats: 0\n", "h.yaml:5: spec.repeats: 0: want 1 to 1000"},
		{"period 0", "limit: 500m", "period: 0", "h.yaml:13: spec.configs[0].cpu.period: 0s: want 1ms to 1s (leave it out for 100ms)"},
		{"negative period", "limit: 500m", "period: -100ms", "h.yaml:13: spec.configs[0].cpu.period: period -100ms: want 1ms to 1s"},
		{"period too long", "limit: 500m", "period: 2s", "period 2s: want 1ms to 1s"},
		{"burst in millicores", "limit: 500m", "limit: 500m\n        burst: 900m", "h.yaml:14: spec.configs[0].cpu.burst: burst 15h0m0s: a suffix m means minutes here, not millicores: the burst is a duration such as 20ms"},
		{"period in nanoseconds", "limit: 500m", "period: 1500500ns", "period 1.5005ms: want whole microseconds"},
		{"negative burst", "limit: 500m", "limit: 500m\n        burst: -1ms", "spec.configs[0].cpu.burst: burst -1ms: must not be negative"},
		{"zero limit", "limit: 500m", "limit: 0", "spec.configs[0].cpu.limit: 0 is no limit to the kubelet"},
		{"zero request", "limit: 500m", "request: 0m", "spec.configs[0].cpu.request: 0m requests nothing"},
		{"gomaxprocs with letters", "    - name: a\n", "    - name: a\n      server: {gomaxprocs: \"4abc\"}\n", `h.yaml:12: spec.configs[0].server.gomaxprocs: gomaxprocs "4abc": want host, automaxprocs, go or a number from 1 to 4096`},
		{"gomaxprocs in hex", "    - name: a\n", "    - name: a\n      server: {gomaxprocs: 0x10}\n", `spec.configs[0].server.gomaxprocs: gomaxprocs "0x10"`},
		{"gomaxprocs huge", "    - name: a\n", "    - name: a\n      server: {gomaxprocs: 1000000}\n", `spec.configs[0].server.gomaxprocs: gomaxprocs "1000000"`},
		{"infinite rate", "rate: 10", "rate: .inf", "h.yaml:8: spec.load.rate: rate +Inf: want a finite number"},
		{"NaN rate", "rate: 10", "rate: .nan", "spec.load.rate: rate NaN"},
		{"rate too high", "rate: 10", "rate: 1e9", "spec.load.rate: rate 1e+09: want 0.001 to 1e+06"},
		{"rate as text", "rate: 10", "rate: lots", `h.yaml:8: spec.load.rate: "lots" is not a number`},
		{"duration 0", "duration: 2s", "duration: 0s", "spec.load.duration: 0s: want 1ms to 24h"},
		{"duration too long", "duration: 2s", "duration: 100000h", "spec.load.duration: duration 100000h0m0s: want 1ms to 24h"},
		{"duration overflows", "duration: 2s", "duration: 9999999999h", `h.yaml:9: spec.load.duration: "9999999999h" is not a duration`},
		{"timeout 0", "duration: 2s", "duration: 2s\n    timeout: 0s", "spec.load.timeout: 0s: want 1ms to 1h"},
		{"workers on a rate load", "duration: 2s", "duration: 2s\n    workers: 4", "h.yaml:10: spec.load.workers: workers does not apply to mode rate: it sets the closed-loop workers of mode image"},
		{"sources on a rate load", "duration: 2s", "duration: 2s\n    sources: 4", "spec.load.sources: sources does not apply to mode rate"},
		{"step on a rate load", "duration: 2s", "duration: 2s\n    step: 1s", "spec.load.step: step does not apply to mode rate"},
		{"too many sources", "mode: rate", "mode: onoff\n    sources: 100000", "spec.load.sources: 100000: want 1 to 4096"},
		{"rate on a noise neighbour", "      kind: noise\n", "      kind: noise\n      rate: 5\n", "h.yaml:17: spec.neighbours[0].rate: rate does not apply to a noise neighbour: it sets the request rate of a probe"},
		{"threads 0", "      kind: noise\n", "      kind: noise\n      threads: 0\n", "spec.neighbours[0].threads: 0: want 1 to 4096"},
		{"threads huge", "      kind: noise\n", "      kind: noise\n      threads: 100000\n", "spec.neighbours[0].threads: 100000: want 1 to 4096"},
		{"workers on noise", "      kind: noise\n", "      kind: noise\n      workers: 2\n", "workers does not apply to a noise neighbour"},
		{"burst workers huge", "      kind: noise\n", "      kind: burst\n      workers: 100000\n", "spec.neighbours[0].workers: 100000: want 1 to 4096"},
		{"busy 1ns", "      kind: noise\n", "      kind: burst\n      busy: 1ns\n", "spec.neighbours[0].busy: busy 1ns: want 1ms to 1h"},
		{"sleep 0", "      kind: noise\n", "      kind: burst\n      sleep: 0s\n", "spec.neighbours[0].sleep: 0s: a burst worker that never sleeps is a noise neighbour"},
		{"probe rate huge", "      kind: noise\n", "      kind: probe\n      rate: 1e12\n", "spec.neighbours[0].rate: rate 1e+12"},
		{"probe rate 0", "      kind: noise\n", "      kind: probe\n      rate: 0\n", "spec.neighbours[0].rate: 0: a probe needs a rate"},
		{"cpu on a probe", "      kind: noise\n", "      kind: probe\n      cpu: {limit: 1}\n", "spec.neighbours[0].cpu: cpu does not apply to a probe neighbour"},
		{"two probes", "      kind: noise\n", "      kind: probe\n    - {name: p2, kind: probe}\n", "a run takes one"},
		{"burst on api", "request: burn", "request: api, burn: cpu=1ms", "spec.workload.burn: burn does not apply to request api"},
		{"burn too long", "request: burn", "request: burn, burn: cpu=1h", "spec.workload.burn: burn cpu 1h0m0s: want 1µs to 10s"},
		{"burn iterations huge", "request: burn", "request: burn, burn: iterations=18446744073709551615", "spec.workload.burn: burn \"iterations=18446744073709551615\": want iterations=N with N from 1 to 10000000000"},
		{"ingress huge", "spec:\n", "spec:\n  balancer: ingress:1000000000000\n", "spec.balancer: balancer \"ingress:1000000000000\": want ingress:K with 1 to 1024"},
		{"too many runs", "spec:\n", "spec:\n  repeats: 1000\n  loads: [{mode: sequential, requests: 1}, {mode: sequential, requests: 2, name: b}, {mode: sequential, requests: 3, name: c}, {mode: sequential, requests: 4, name: d}, {mode: sequential, requests: 5, name: e}, {mode: sequential, requests: 6, name: f}, {mode: sequential, requests: 7, name: g}, {mode: sequential, requests: 8, name: h}, {mode: sequential, requests: 9, name: i}, {mode: sequential, requests: 10, name: j}, {mode: sequential, requests: 11, name: k}]\n  load_:\n", ""},
		{"seed 0", "spec:\n", "spec:\n  seed: 0\n", "spec.seed: 0: want 1 or more"},
		{"warmup too long", "spec:\n", "spec:\n  warmup: 2h\n", "spec.warmup: warmup 2h0m0s: want 0s to 1h"},
		{"name too long", "name: h}", "name: " + strings.Repeat("n", 49) + "}", "metadata.name: \"nnnnnnnnn"},
		{"instances as text", "    - name: a\n", "    - name: a\n      instances: many\n", `h.yaml:12: spec.configs[0].instances: "many" is not a whole number`},
		{"instances as a list", "    - name: a\n", "    - name: a\n      instances: [1]\n", `spec.configs[0].instances: want a single value, not a list`},
		{"field twice", "    rate: 10\n", "    rate: 10\n    rate: 11\n", "h.yaml:9: spec.load.rate: given twice (first on line 8)"},
		{"unknown field in a neighbour", "      kind: noise\n", "      kind: noise\n      therads: 2\n", "h.yaml:17: spec.neighbours[0].therads: unknown field: spec.neighbours[0] takes name, kind, threads"},
		{"config not a mapping", "    - name: a\n      cpu:\n        limit: 500m\n", "    - a\n", "h.yaml:11: spec.configs[0]: want a mapping"},
		{"empty", "", "", "h.yaml: empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := hostile
			if tt.name == "empty" {
				spec = ""
			} else if !strings.Contains(spec, tt.from) {
				t.Fatalf("test broken: %q not in the spec", tt.from)
			}
			if tt.name == "too many runs" {
				spec = strings.Replace(spec, "  load:\n    mode: rate\n    rate: 10\n    duration: 2s\n", "", 1)
				spec = strings.Replace(spec, tt.from, strings.Replace(tt.to, "  load_:\n", "", 1), 1)
				tt.want = "spec.repeats: 1 configs x 11 loads x 1000 repeats is 11000 runs: at most 10000"
			} else if tt.name != "empty" {
				spec = strings.Replace(spec, tt.from, tt.to, 1)
			}
			_, err := Parse([]byte(spec), "h.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v\nwant one containing %q", err, tt.want)
			}
			if err != nil && (strings.Contains(err.Error(), "\n") || !errors.Is(err, ErrInvalidSpec)) {
				t.Errorf("error %q: want one line, and errors.Is(err, ErrInvalidSpec)", err)
			}
		})
	}
	if _, err := Parse([]byte(hostile), "h.yaml"); err != nil {
		t.Fatalf("the good spec: %v", err)
	}
}

// TestHostileCostsLittle: a huge cpuset is refused without being expanded
// (expanding it would take memory and time in proportion to the range).
func TestHostileCostsLittle(t *testing.T) {
	spec := []byte(strings.Replace(hostile, "limit: 500m", `cpuset: "0-10000000"`, 1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := Parse(spec, "h.yaml"); err == nil {
		t.Fatal("accepted")
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Errorf("refusing a huge cpuset allocated %d bytes", n)
	}
}

// TestWarnings: values that Kubernetes semantics change are accepted, with a
// warning that says what takes effect and where it was written.
func TestWarnings(t *testing.T) {
	for _, tt := range []struct {
		name, from, to string
		want           []string
	}{
		{"none", "", "", nil},
		{"quota floor", "limit: 500m", "limit: 1m", []string{
			"h.yaml:13: spec.configs[0].cpu.limit: limit 1m with a 100ms period is a quota of 100us, under the kubelet's 1ms floor: it sets 1000us, which is 0.01 CPU",
			"h.yaml:13: spec.configs[0].cpu.limit: a request of 1m is 1 cpu.shares; the kubelet sets at least 2 (as for 2m)"}},
		{"short period", "limit: 500m", "limit: 500m\n        period: 1500us", []string{
			"h.yaml:13: spec.configs[0].cpu.limit: limit 500m with a 1.5ms period is a quota of 750us, under the kubelet's 1ms floor: it sets 1000us, which is 0.667 CPU"}},
		{"millicore rounding", "limit: 500m", "limit: 0.2501", []string{
			"h.yaml:13: spec.configs[0].cpu.limit: 0.2501 is finer than a millicore: Kubernetes rounds it up to 251m"}},
		{"on a neighbour", "      kind: noise\n", "      kind: noise\n      cpu: {request: 1m}\n", []string{
			"h.yaml:17: spec.neighbours[0].cpu.request: a request of 1m is 1 cpu.shares; the kubelet sets at least 2 (as for 2m)"}},
		{"deprecated gomaxprocs limit", "    - name: a\n", "    - name: a\n      server: {gomaxprocs: limit}\n", []string{
			`h.yaml:12: spec.configs[0].server.gomaxprocs: gomaxprocs "limit" is deprecated: it is the quota rounded up, at least 1, which neither automaxprocs (rounded down, at least 1) nor Go 1.25+ (rounded up, at least 2) does; write automaxprocs or go`}},
		{"gomaxprocs go: no warning", "    - name: a\n", "    - name: a\n      server: {gomaxprocs: go}\n", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Parse([]byte(strings.Replace(hostile, tt.from, tt.to, 1)), "h.yaml")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range e.Warnings() {
				got = append(got, w.String())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("warnings %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestResolvedRoundTripEveryMode: the spec.yaml written for every mode and
// kind of neighbour reads back the same (defaults are filled in only where
// they apply, so nothing written is refused on reading).
func TestResolvedRoundTripEveryMode(t *testing.T) {
	spec := `apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata: {name: modes}
spec:
  workload: {request: api}
  loads:
    - {mode: image}
    - {mode: ramp}
    - {mode: rate, rate: 5, duration: 1s}
    - {mode: onoff, duration: 1s}
    - {mode: probe, requests: 10}
    - {mode: sequential, requests: 10}
  configs: [{name: a, server: {gomaxprocs: limit}, cpu: {limit: 1, burst: 10ms, cpuset: "0"}}, {name: b, server: {gomaxprocs: 3}}]
  neighbours:
    - {name: n, kind: noise}
    - {name: bu, kind: burst}
    - {name: p, kind: probe}
    - {name: s, kind: server}
`
	spec = strings.Replace(spec, "{mode: image}", "{mode: image, workers: 2}", 1)
	spec = strings.Replace(spec, "request: api", "request: tile, tiles: sample:10", 1)
	e, err := Parse([]byte(spec), "modes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(b, "spec.yaml")
	if err != nil {
		t.Fatalf("the resolved spec does not parse: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(e.Spec, again.Spec) {
		t.Errorf("round trip changed the spec:\n%s", b)
	}
}

// TestReadSpecLegacy: spec.yaml files written by older versions carried
// workers: 1 on every load and a period on a probe; results directories that
// hold them still read.
func TestReadSpecLegacy(t *testing.T) {
	readSaved := func(dir string) (*Experiment, error) {
		b, err := os.ReadFile(dir + "/spec.yaml")
		if err != nil {
			return nil, err
		}
		return ParseSaved(b, dir+"/spec.yaml")
	}
	for _, dir := range []string{"../report/testdata/limits", "../sim/testdata/real/limits"} {
		if _, err := readSaved(dir); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
		b, err := os.ReadFile(dir + "/spec.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(b, "spec.yaml"); err == nil || !strings.Contains(err.Error(), "workers does not apply") {
			t.Errorf("%s read as a user's spec: %v, want the workers refused", dir, err)
		}
	}
	legacy := strings.Replace(hostile, "      kind: noise\n", "      kind: probe\n      cpu: {period: 100ms}\n", 1)
	dir := t.TempDir()
	os.WriteFile(dir+"/spec.yaml", []byte(legacy), 0o644)
	if e, err := readSaved(dir); err != nil || e.Spec.Neighbours[0].CPU != (CPU{}) {
		t.Errorf("legacy probe: %v", err)
	}
}

// FuzzParse: whatever the bytes, Parse returns (never panics, never hangs,
// never allocates without bound), and every error is a *SpecError on one
// line that names the file. What it accepts is within bounds and reads back
// the same after writing.
func FuzzParse(f *testing.F) {
	for _, p := range []string{"../examples/limits.yaml", "../report/testdata/ramp/spec.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(hostile))
	for _, r := range []string{`cpuset: "0-10000000"`, "limit: 99999999999999999m", "period: -100ms", "limit: 1m"} {
		f.Add([]byte(strings.Replace(hostile, "limit: 500m", r, 1)))
	}
	f.Add([]byte("a: &a [*a, *a]"))
	f.Add([]byte("spec: {configs: [&c {name: a}, *c]}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		e, err := Parse(b, "fuzz.yaml")
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20+uint64(len(b))*4096 {
			t.Fatalf("%d bytes of spec allocated %d bytes", len(b), n)
		}
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), "fuzz.yaml") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q: want one line, a *SpecError, naming the file", err)
			}
			return
		}
		if len(e.Runs()) > MaxRuns {
			t.Fatalf("%d runs", len(e.Runs()))
		}
		out, err := yaml.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(out, "fuzz.yaml")
		if err != nil {
			t.Fatalf("accepted, but its resolved form is refused: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(e.Spec, again.Spec) {
			t.Fatalf("round trip changed the spec:\n%s", out)
		}
	})
}

func TestCheckCPUs(t *testing.T) {
	e, err := Parse([]byte(strings.Replace(hostile, "limit: 500m", "cpuset: 0-7", 1)), "h.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.CheckCPUs(8); err != nil {
		t.Errorf("8 CPUs: %v", err)
	}
	err = e.CheckCPUs(2)
	if err == nil || err.Error() != "h.yaml:13: spec.configs[0].cpu.cpuset: cpuset 0-7 names CPU 7, which a machine of 2 CPUs (0-1) does not have" || !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("2 CPUs: %v", err)
	}
}
