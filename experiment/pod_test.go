package experiment

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

const podSpec = `apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata:
  name: x
spec:
  load:
    mode: rate
    rate: 10
    duration: 2s
  configs:
    - name: pod
      instances: 2
      cpu:
        request: 250m
        limit: 800m
      pod:
        cpu:
          limit: "1"
`

// TestPodBlock: a config's pod-level cpu block is parsed into the plan with
// the instances' period, and every way of writing it wrong is one line
// naming the field.
func TestPodBlock(t *testing.T) {
	e, err := Parse([]byte(podSpec), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := e.Spec.Configs[0]
	if c.Pod == nil || c.Pod.CPU.Limit.Milli != 1000 || c.Pod.CPU.Period.Duration != 100*time.Millisecond || c.CPU.Limit.Milli != 800 {
		t.Fatalf("pod not in the plan: %+v", c)
	}
	// The spec a run saves, every default filled in, reads back (--resume).
	b, err := Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseSaved(b, "spec.yaml")
	if err != nil || back.Spec.Configs[0].Pod == nil || back.Spec.Configs[0].Pod.CPU != c.Pod.CPU {
		t.Fatalf("saved spec does not read back: %v\n%s", err, b)
	}
	tests := []struct{ name, from, to, want string }{
		{"no limit", `          limit: "1"` + "\n", "          request: 500m\n", "spec.configs[0].pod.cpu.limit: missing"},
		{"period", `          limit: "1"` + "\n", `          limit: "1"` + "\n          period: 50ms\n", "spec.configs[0].pod.cpu.period: 50ms differs from the instances' period 100ms"},
		{"burst", `          limit: "1"` + "\n", `          limit: "1"` + "\n          burst: 5ms\n", "spec.configs[0].pod.cpu.burst: not a pod-level setting"},
		{"cpuset", `          limit: "1"` + "\n", `          limit: "1"` + "\n          cpuset: 0-1\n", "spec.configs[0].pod.cpu.cpuset: not a pod-level setting"},
		{"below instance limit", `limit: "1"`, "limit: 500m", "spec.configs[0].pod.cpu.limit: 500m is below the instances' own limit"},
		{"request below sum", `          limit: "1"` + "\n", `          limit: "1"` + "\n          request: 300m\n", "spec.configs[0].pod.cpu.request: 300m is below the instances' requests summed (500m)"},
		{"request above limit", `          limit: "1"` + "\n", `          limit: "1"` + "\n          request: 2\n", "spec.configs[0].pod.cpu.request"},
		{"instance cpuset", "        limit: 800m\n", "        limit: 800m\n        cpuset: 0-1\n", "spec.configs[0].cpu.cpuset: a cpuset inside a pod-level limit is not supported"},
		{"unknown field", `          limit: "1"` + "\n", `          limit: "1"` + "\n          limt: 2\n", "spec.configs[0].pod.cpu.limt: unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := strings.Replace(podSpec, tt.from, tt.to, 1)
			if bad == podSpec {
				t.Fatalf("replacement %q not found", tt.from)
			}
			_, err := Parse([]byte(bad), "x.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v\nwant one containing %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

// TestPodBlockWarnsUnapplied: the plan names the backends that do not apply
// the pod limit instead of dropping it silently.
func TestPodBlockWarnsUnapplied(t *testing.T) {
	e, err := Parse([]byte(podSpec), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range e.Warnings() {
		if strings.Contains(w.String(), "pod.cpu") && strings.Contains(w.String(), "PodLevelResources") && strings.Contains(w.String(), "refuses a cluster that drops it") {
			return
		}
	}
	t.Errorf("no warning that the pod limit is not applied: %v", e.Warnings())
}

// TestDescribePod: validate shows the pod-level limit beside the configs.
func TestDescribePod(t *testing.T) {
	e, err := Parse([]byte(podSpec), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Describe(&b, e, "x.yaml", 2); err != nil {
		t.Fatal(err)
	}
	if want := "  pod: pod-level limit 1 (request -) over its 2 instances (local backend and simulator only)\n"; !strings.Contains(b.String(), want) {
		t.Errorf("the description lacks %q:\n%s", want, b.String())
	}
}

// TestRefusePod: a backend that cannot apply the pod limit gets a spec error
// (exit 2) at the pod block, one line; a spec without one passes.
func TestRefusePod(t *testing.T) {
	e, err := Parse([]byte(podSpec), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	err = e.RefusePod("kubernetes")
	if !errors.Is(err, ErrInvalidSpec) || !strings.HasPrefix(err.Error(), "x.yaml:16: spec.configs[0].pod: the kubernetes backend") || strings.Contains(err.Error(), "\n") {
		t.Errorf("RefusePod = %v", err)
	}
	plain, err := Parse([]byte(strings.Replace(podSpec, "      pod:\n        cpu:\n          limit: \"1\"\n", "", 1)), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if plain.Spec.Configs[0].Pod != nil || plain.RefusePod("kubernetes") != nil {
		t.Errorf("a spec without a pod block refused: %+v", plain.Spec.Configs[0])
	}
}
