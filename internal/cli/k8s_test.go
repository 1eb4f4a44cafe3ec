package cli

import (
	"bytes"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/k8s"
	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/presets"
)

// renderable returns every example and preset that renders.
func renderable(t *testing.T) map[string]*experiment.Experiment {
	t.Helper()
	out := map[string]*experiment.Experiment{}
	files, _ := filepath.Glob("../../examples/*.yaml")
	for _, f := range files {
		e, err := experiment.LoadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = e
	}
	for _, p := range presets.All() {
		e, err := p.Spec()
		if err != nil {
			t.Fatal(err)
		}
		out[p.Name] = e
	}
	return out
}

// TestK8sLoadArgsMeanTheSpecsLoad parses the arguments of every rendered
// load container with the load command's own flags, and checks that they
// give the load generator the configuration the local backend gives it.
func TestK8sLoadArgsMeanTheSpecsLoad(t *testing.T) {
	jobs := 0
	for name, e := range renderable(t) {
		m, err := k8s.Render(e, k8s.Options{Image: "throttlelab:test"})
		var se *k8s.SpecError
		if errors.As(err, &se) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, co := range m.Configs {
			for li, job := range co.Loads {
				jobs++
				spec := job.Spec.Template.Spec
				want := e.LoadConfig(e.Spec.Loads[li])
				got := parseLoad(t, name, spec.Containers[0].Args)
				want.Targets, want.NewConnection = got.Targets, got.NewConnection
				if !sameLoad(got, want) {
					t.Errorf("%s %s: the load container's flags mean\n%+v\nthe spec's load is\n%+v", name, job.Name, got, want)
				}
				if len(got.Targets) == 0 || (e.Spec.Balancer.String() != "random" && len(got.Targets) != len(co.Instances)) {
					t.Errorf("%s %s: targets %v for %d instances", name, job.Name, got.Targets, len(co.Instances))
				}
				if w := co.Warmups[li]; w != nil {
					warm := parseLoad(t, name, w.Spec.Template.Spec.Containers[0].Args)
					if warm.Duration != e.Spec.Warmup.Duration || warm.Seed != want.Seed {
						t.Errorf("%s %s: warm-up for %s, want %s", name, w.Name, warm.Duration, e.Spec.Warmup.Duration)
					}
				}
				for _, c := range spec.Containers[1:] {
					if c.Name == k8s.ResultsContainer {
						holdArgs(t, name, c.Args)
					} else {
						parseLoad(t, name, c.Args)
					}
				}
			}
		}
	}
	if jobs < 10 {
		t.Fatalf("only %d load Jobs rendered", jobs)
	}
}

// holdArgs parses the results container's command line with the command
// it runs.
func holdArgs(t *testing.T, name string, args []string) {
	t.Helper()
	if len(args) == 0 || args[0] != "k8s" {
		t.Fatalf("%s: the results container runs %v", name, args)
	}
	c, rest, err := newK8sCmd().Find(args[1:])
	if err != nil || c.Name() != "hold" {
		t.Fatalf("%s: the results container runs %v: %v", name, args, err)
	}
	if err := c.ParseFlags(rest); err != nil {
		t.Fatalf("%s: %v: %v", name, args, err)
	}
}

// parseLoad parses a load container's arguments (this package does not
// import the Kubernetes API: the container is its arguments).
func parseLoad(t *testing.T, name string, args []string) loadgen.Config {
	t.Helper()
	if len(args) == 0 || args[0] != "load" {
		t.Fatalf("%s: a load container runs %v", name, args)
	}
	var f loadFlags
	cmd := newLoadCmdInto(&f)
	if err := cmd.ParseFlags(args[1:]); err != nil {
		t.Fatalf("%s: %v: %v", name, args, err)
	}
	got, err := f.config(cmd)
	if err != nil {
		t.Fatalf("%s: %v (args %v)", name, err, args)
	}
	return got
}

// sameLoad compares what a load means: the fields of its mode.
func sameLoad(a, b loadgen.Config) bool {
	same := a.Mode == b.Mode && a.Balancer == b.Balancer && a.Workload.Kind == b.Workload.Kind &&
		a.Rate == b.Rate && a.Duration == b.Duration && a.Requests == b.Requests &&
		a.Timeout == b.Timeout && a.Seed == b.Seed
	switch a.Workload.Kind {
	case loadgen.KindTile:
		same = same && a.Workload.Tiles == b.Workload.Tiles
	case loadgen.KindBurn:
		same = same && a.Workload.Burn == b.Workload.Burn
	}
	// Settings of other modes are left at zero in the spec and at the flags'
	// defaults on a command line: only those of the mode are compared.
	switch a.Mode {
	case loadgen.ModeImage:
		same = same && a.Workers == b.Workers
	case loadgen.ModeRamp:
		same = same && a.Ramp == b.Ramp && a.RampStep == b.RampStep
	case loadgen.ModeOnOff:
		same = same && a.Sources == b.Sources && a.OnMean == b.OnMean && a.OffMean == b.OffMean
	case loadgen.ModeRate, loadgen.ModeProbe:
		same = same && a.Arrivals == b.Arrivals
	}
	return same
}

// TestK8sServerArgs parses every rendered pod's arguments with the command
// they run, and checks the server flags against the config.
func TestK8sServerArgs(t *testing.T) {
	for name, e := range renderable(t) {
		m, err := k8s.Render(e, k8s.Options{Image: "throttlelab:test", BurnIterationsPerMs: 123456.7})
		if err != nil {
			continue
		}
		for ci, co := range m.Configs {
			cfg := e.Spec.Configs[ci]
			for _, s := range co.Servers {
				p, c := co.ServerContainer(s)
				if c == nil {
					t.Fatalf("%s: no container %s in a pod %s", name, s.Container, s.Pod)
				}
				fl := parseArgs(t, name, c.Args).Flags()
				got := func(flag string) string { v, _ := fl.GetString(flag); return v }
				single, _ := fl.GetBool("single")
				clock, _ := fl.GetBool("cpu-clock")
				burn, _ := fl.GetFloat64("burn-calibration")
				if got("name") != s.Name || got("gomaxprocs") != cfg.Server.GOMAXPROCS.String() || single != cfg.Server.Single ||
					clock != (cfg.Server.CPUClock == nil || *cfg.Server.CPUClock) || burn != 123456.7 || got("listen") != ":"+strconv.Itoa(s.Port) {
					t.Errorf("%s: %s in pod %s runs %v for server settings %+v", name, s.Name, p.Name, c.Args, cfg.Server)
				}
			}
			for _, p := range co.Neighbours {
				parseArgs(t, name, p.Spec.Containers[0].Args)
			}
		}
	}
}

// parseArgs parses a container's arguments with the subcommand they name.
func parseArgs(t *testing.T, name string, args []string) *cobra.Command {
	t.Helper()
	root := newRootCmd()
	cmd, rest, err := root.Find(args)
	if err != nil || cmd == root {
		t.Fatalf("%s: %v names no command: %v", name, args, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("%s: %v: %v", name, args, err)
	}
	return cmd
}

// TestK8sRenderCommand runs the command: YAML on stdout for a spec, and for
// bad input one line and exit status 2 before anything is printed.
func TestK8sRenderCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Run([]string{"k8s", "render", "../../examples/limits.yaml", "--image", "registry.example/throttlelab:v1", "--namespace", "lab"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "\n  namespace: lab\n") || !strings.Contains(out.String(), "image: registry.example/throttlelab:v1\n") {
		t.Errorf("output lacks the namespace or image:\n%s", out.String())
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"f13-cpu-burst"}, "f13-cpu-burst: spec.configs[1].cpu.burst: 400ms: Kubernetes has no API for CPU burst"},
		{[]string{"f14-pinning"}, "spec.configs[1].cpu.cpuset"},
		{[]string{"../../examples/limits.yaml", "--image", "Registry/Throttlelab"}, "--image: \"Registry/Throttlelab\" is not an image reference"},
		{[]string{"../../examples/limits.yaml", "--namespace", "my_lab"}, "--namespace: \"my_lab\" is not a DNS label"},
		{[]string{"../../examples/limits.yaml", "--quick"}, "--quick is for presets"},
		{[]string{"f01-logjam", "--cores", "4"}, "--cores is for --quick"},
		{[]string{"no-such-preset"}, "neither a spec file nor a preset"},
		{[]string{}, "takes 1 argument"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(append([]string{"k8s", "render"}, tt.args...), &out, &errb)
			lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
			if code != 2 || len(lines) != 1 || !strings.Contains(errb.String(), tt.want) || out.Len() != 0 {
				t.Errorf("exit %d, stdout %d bytes, stderr %q: want exit 2, nothing on stdout, one line containing %q", code, out.Len(), errb.String(), tt.want)
			}
		})
	}
	// --quick renders a preset's quick variant, scaled for --cores.
	out.Reset()
	if code := Run([]string{"k8s", "render", "f01-logjam", "--quick", "--cores", "4"}, &out, &errb); code != 0 {
		t.Fatalf("--quick: exit %d: %s", code, errb.String())
	}
	if n := strings.Count(out.String(), "\nkind: Pod\n"); n != 3 || strings.Count(out.String(), "\n      limits:\n        cpu: \"1\"\n") != 2 {
		t.Errorf("--quick --cores 4: %d pods (want 1 unlimited and 2 limited to 1 CPU)", n)
	}
}
