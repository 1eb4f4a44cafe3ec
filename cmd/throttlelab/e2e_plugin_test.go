package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionAndPlugin builds the binary as make release does (the version
// stamped) and runs it as a user would: version prints the version, the
// agent's manifests default to the release's image without a warning, while
// a development build warns about its image; linked as kubectl-throttlelab,
// it is the kubectl plugin "kubectl throttlelab", through the real kubectl
// when one is installed.
func TestVersionAndPlugin(t *testing.T) {
	const version = "v0.0.0-test.1"
	dir := t.TempDir()
	rel := filepath.Join(dir, "throttlelab")
	out, err := exec.Command("go", "build", "-ldflags", "-X github.com/throttlelab/throttlelab/internal/cli.Version="+version, "-o", rel, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	runBin := func(bin string, env []string, args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s%s", bin, strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String(), stderr.String()
	}

	if got, _ := runBin(rel, nil, "version"); !strings.HasPrefix(got, "throttlelab "+version+" (release;") {
		t.Errorf("version: %q, want throttlelab %s (release; ...)", got, version)
	}
	manifests, warned := runBin(rel, nil, "k8s", "render", "agent")
	if !strings.Contains(manifests, "image: ghcr.io/throttlelab/throttlelab:"+version+"\n") || warned != "" {
		t.Errorf("a release's k8s render agent: stderr %q, manifests without image ghcr.io/throttlelab/throttlelab:%s:\n%s", warned, version, manifests)
	}
	if got, _ := runBin(binary, nil, "version"); !strings.Contains(got, "development build, not a release") {
		t.Errorf("a development build's version: %q", got)
	}
	if _, warned := runBin(binary, nil, "k8s", "render", "agent"); !strings.Contains(warned, "a development build") || !strings.Contains(warned, "give --image") {
		t.Errorf("a development build's k8s render agent warned %q", warned)
	}

	plugin := filepath.Join(dir, "kubectl-throttlelab")
	if err := os.Symlink(rel, plugin); err != nil {
		t.Fatal(err)
	}
	if help, _ := runBin(plugin, nil, "--help"); !strings.Contains(help, "\n  kubectl throttlelab [command]\n") {
		t.Errorf("kubectl-throttlelab --help does not say kubectl throttlelab:\n%s", help)
	}
	if help, _ := runBin(plugin, nil, "--help"); !strings.Contains(help, "Concepts: kubectl throttlelab help quota") {
		t.Errorf("kubectl-throttlelab --help points at the concepts as another command:\n%s", help)
	}
	var stderr strings.Builder
	bad := exec.Command(plugin, "advise", "--no-such-flag")
	bad.Stderr = &stderr
	if err := bad.Run(); err == nil || !strings.HasPrefix(stderr.String(), "kubectl throttlelab: ") {
		t.Errorf("kubectl-throttlelab with a bad flag: %v, stderr %q (want it to begin kubectl throttlelab: )", err, stderr.String())
	}
	if help, _ := runBin(plugin, nil, "check", "--help"); !strings.Contains(help, "\n  kubectl throttlelab check MANIFESTS...") {
		t.Errorf("kubectl-throttlelab check --help does not say kubectl throttlelab check:\n%s", help)
	}
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("no kubectl on PATH: the plugin was run through its link only")
	}
	env := []string{"PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH"), "KUBECONFIG=" + filepath.Join(dir, "no-kubeconfig")}
	if got, _ := runBin(kubectl, env, "throttlelab", "version"); !strings.HasPrefix(got, "throttlelab "+version+" ") {
		t.Errorf("kubectl throttlelab version: %q", got)
	}
	if help, _ := runBin(kubectl, env, "throttlelab", "k8s", "--help"); !strings.Contains(help, "kubectl throttlelab k8s [command]") {
		t.Errorf("kubectl throttlelab k8s --help:\n%s", help)
	}
}
