package fleet

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLint finds, in a bad manifest, each thing that needs no demand at
// its line, and the QoS class change against the manifests before; an
// experiment spec with a burst above its quota is reported at its line;
// and the repository's example spec and the agent's manifests are clean.
func TestLint(t *testing.T) {
	base, err := ReadManifests([]string{"testdata/lint/base.yaml"}, nil, "default")
	if err != nil {
		t.Fatal(err)
	}
	fs, sum, err := Lint([]string{"testdata/lint/bad.yaml", "testdata/lint/burst.yaml"}, nil, "default", base)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		pos, name, says string
	}{
		{"testdata/lint/bad.yaml:15", "shop/deployment/api/over", "requests.cpu 500m is above limits.cpu 250m"},
		{"testdata/lint/bad.yaml:23", "shop/deployment/api/tiny", "under the kernel's 1ms minimum"},
		{"testdata/lint/bad.yaml:27", "shop/deployment/api/nolimitrequest", "limits.cpu 1 without requests.cpu"},
		{"testdata/lint/bad.yaml:52", "shop/deployment/db/postgres", "QoS class changes from Guaranteed to Burstable"},
		{"testdata/lint/burst.yaml:18", "spec.configs[0].cpu.burst", "above the quota"},
	}
	if len(fs) != len(want) || sum.Containers != 5 || sum.Specs != 1 {
		t.Fatalf("%d findings (%+v), want %d: %v", len(fs), sum, len(want), fs)
	}
	for i, w := range want {
		if got := fs[i].String(); !strings.HasPrefix(got, w.pos+": "+w.name+": ") || !strings.Contains(got, w.says) {
			t.Errorf("finding %d: %q, want %s: %s: ...%s...", i, got, w.pos, w.name, w.says)
		}
	}
	// Without the base, no QoS finding.
	if fs, _, _ := Lint([]string{"testdata/lint/bad.yaml"}, nil, "default", nil); len(fs) != 3 {
		t.Errorf("without a base: %v", fs)
	}

	// Clean: the example spec, and the agent's manifests as rendered.
	if fs, sum, err := Lint([]string{"../examples"}, nil, "default", nil); err != nil || len(fs) != 0 || sum.Specs == 0 {
		t.Errorf("examples/: %v %+v %v", fs, sum, err)
	}
	out, err := exec.Command("go", "run", "../cmd/throttlelab", "k8s", "render", "agent", "--image", "ghcr.io/throttlelab/throttlelab:v1.0.0").Output()
	if err != nil {
		t.Fatal(err)
	}
	if fs, sum, err := Lint([]string{"-"}, strings.NewReader(string(out)), "default", nil); err != nil || len(fs) != 0 || sum.Containers != 1 {
		t.Errorf("k8s render agent: %v %+v %v", fs, sum, err)
	}
}

// TestQoSClass derives the pod QoS class as the kubelet does.
func TestQoSClass(t *testing.T) {
	pod := func(resources string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources: " + resources + "\n"
	}
	for _, c := range []struct{ res, want string }{
		{"{}", "BestEffort"},
		{"{limits: {cpu: '1', memory: 1Gi}}", "Guaranteed"},
		{"{limits: {cpu: '1', memory: 1Gi}, requests: {cpu: 1000m, memory: 1024Mi}}", "Guaranteed"},
		{"{limits: {cpu: '1', memory: 1Gi}, requests: {cpu: 500m}}", "Burstable"},
		{"{limits: {cpu: '1'}}", "Burstable"},
		{"{requests: {memory: 1Gi}}", "Burstable"},
	} {
		ms, err := ParseManifest("p.yaml", []byte(pod(c.res)), "default")
		if err != nil || len(ms) != 1 || ms[0].QoS != c.want {
			t.Errorf("resources %s: %+v %v, want %s", c.res, ms, err, c.want)
		}
	}
}

// podSpec is a Deployment web in namespace shop whose pod has resources
// pod (pod-level, YAML flow, line 9) and containers app and proxy with
// theirs.
func podSpec(pod, app, proxy string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  template:
    spec:
      resources: ` + pod + `
      containers:
      - name: app
        resources: ` + app + `
      - name: proxy
        resources: ` + proxy + `
`
}

// TestLintPodLevel finds each pod-level finding at the pod-level limit's
// line, and none in a pod whose containers fit under it.
func TestLintPodLevel(t *testing.T) {
	for _, c := range []struct {
		name, pod, app, proxy string
		want                  []string // each finding's message contains one
	}{
		{"fits", "{limits: {cpu: 1}}", "{requests: {cpu: 300m}, limits: {cpu: 600m}}", "{requests: {cpu: 100m}, limits: {cpu: 400m}}", nil},
		{"no container limits", "{limits: {cpu: 400m}}", "{}", "{}", nil},
		{"limits sum above", "{limits: {cpu: 1}}", "{requests: {cpu: 300m}, limits: {cpu: 800m}}", "{requests: {cpu: 100m}, limits: {cpu: 400m}}",
			[]string{"the containers' limits.cpu sum to 1200m (app 800m + proxy 400m), above the pod-level limit 1"}},
		{"one limit above", "{limits: {cpu: 500m}}", "{requests: {cpu: 100m}, limits: {cpu: 800m}}", "{requests: {cpu: 100m}, limits: {cpu: 100m}}",
			[]string{"container app's limits.cpu 800m is above the pod-level limit 500m: the API server refuses it"}},
		{"requests above", "{limits: {cpu: 400m}}", "{requests: {cpu: 300m}}", "{requests: {cpu: 200m}}",
			[]string{"the pod-level limit 400m is under the containers' requests.cpu summed, 500m: the API server refuses it"}},
		{"a limit is a request", "{limits: {cpu: 400m}}", "{limits: {cpu: 300m}}", "{requests: {cpu: 200m}}",
			[]string{"under the containers' requests.cpu summed, 500m"}},
	} {
		ms, err := ParseManifest("web.yaml", []byte(podSpec(c.pod, c.app, c.proxy)), "default")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []Finding
		for _, f := range LintContainers(ms, nil) {
			if f.Name == "shop/deployment/web" { // the pod's, not the containers' own
				got = append(got, f)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %d pod findings", c.name, got, len(c.want))
			continue
		}
		for i, w := range c.want {
			if got[i].Line != 9 || !strings.Contains(got[i].Msg, w) {
				t.Errorf("%s: %s, want at line 9 ...%s...", c.name, got[i], w)
			}
		}
	}
}

// TestLintPodLevelQoS: pod-level resources decide the QoS class, so adding
// them changes it against --base.
func TestLintPodLevelQoS(t *testing.T) {
	base, err := ParseManifest("base.yaml", []byte(podSpec("{}", "{requests: {cpu: 100m}}", "{}")), "default")
	if err != nil || base[0].QoS != "Burstable" {
		t.Fatalf("base: %+v %v", base, err)
	}
	ms, err := ParseManifest("web.yaml", []byte(podSpec("{limits: {cpu: 1, memory: 1Gi}}", "{}", "{}")), "default")
	if err != nil {
		t.Fatal(err)
	}
	fs := LintContainers(ms, base)
	if len(fs) != 1 || !strings.Contains(fs[0].Msg, "the pod's QoS class changes from Burstable to Guaranteed") {
		t.Errorf("pod-level limits added: %v, want one QoS change Burstable to Guaranteed", fs)
	}
	if fs := LintContainers(base, base); len(fs) != 0 {
		t.Errorf("no change: %v", fs)
	}
}

// TestQoSClassPodLevel derives the QoS class with pod-level resources as
// KEP-2837 does: they alone decide; a pod-level request left out is the
// containers' requests summed when they have any, else the pod's limit.
func TestQoSClassPodLevel(t *testing.T) {
	for _, c := range []struct{ pod, app, want string }{
		{"{limits: {cpu: 1, memory: 1Gi}}", "{}", "Guaranteed"},
		{"{limits: {cpu: 1, memory: 1Gi}, requests: {cpu: 500m, memory: 1Gi}}", "{}", "Burstable"},
		{"{limits: {cpu: 1}}", "{limits: {cpu: 1, memory: 1Gi}}", "Burstable"},      // no pod-level memory limit
		{"{limits: {cpu: 1, memory: 1Gi}}", "{requests: {cpu: 200m}}", "Burstable"}, // pod request derived: 200m
		{"{limits: {cpu: 1, memory: 1Gi}}", "{requests: {cpu: 1000m, memory: 1Gi}}", "Guaranteed"},
		{"{requests: {cpu: 1}}", "{}", "Burstable"},
		{"{}", "{limits: {cpu: 1, memory: 1Gi}}", "Burstable"}, // proxy has nothing: container rule
	} {
		ms, err := ParseManifest("p.yaml", []byte(podSpec(c.pod, c.app, "{}")), "default")
		if err != nil || len(ms) != 2 || ms[0].QoS != c.want {
			t.Errorf("pod %s, app %s: %+v %v, want %s", c.pod, c.app, ms, err, c.want)
		}
	}
}

// TestLintParallelism finds a GOMAXPROCS in env and an
// -XX:ActiveProcessorCount in JAVA_TOOL_OPTIONS above the limit's CPUs
// (300m gives 1, 1500m gives 2), at their lines, and not a setting within
// the limit's CPUs nor one in a container without a limit.
func TestLintParallelism(t *testing.T) {
	fs, _, err := Lint([]string{"testdata/lint/parallelism.yaml"}, nil, "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ pos, name, says string }{
		{"testdata/lint/parallelism.yaml:13", "shop/deployment/api/go", "GOMAXPROCS=8 is above limits.cpu 300m (1 CPU)"},
		{"testdata/lint/parallelism.yaml:20", "shop/deployment/api/java", "-XX:ActiveProcessorCount=4 is above limits.cpu 1500m (2 CPU)"},
	}
	if len(fs) != len(want) {
		t.Fatalf("%d findings, want %d: %v", len(fs), len(want), fs)
	}
	for i, w := range want {
		if got := fs[i].String(); !strings.HasPrefix(got, w.pos+": "+w.name+": ") || !strings.Contains(got, w.says) {
			t.Errorf("finding %d: %q, want %s: %s: ...%s...", i, got, w.pos, w.name, w.says)
		}
	}
}
