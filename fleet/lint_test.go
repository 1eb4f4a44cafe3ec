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
