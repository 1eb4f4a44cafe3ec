package k8s

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/throttlelab/throttlelab"

// isKubernetes reports whether an import path belongs to a Kubernetes module
// (k8s.io/..., sigs.k8s.io/...).
func isKubernetes(path string) bool {
	return strings.HasPrefix(path, "k8s.io/") || strings.HasPrefix(path, "sigs.k8s.io/")
}

// TestOnlyThisPackageImportsKubernetes lists every package of the module:
// none but this one and those under it (k8s/manifest, k8s/agentmanifest,
// ...) imports a Kubernetes module, in its code or its tests, and a package
// that imports none of them has none among its dependencies, so the rest of
// the tree builds without them.
func TestOnlyThisPackageImportsKubernetes(t *testing.T) {
	out, err := exec.Command("go", "list", "-f",
		`{{.ImportPath}}|{{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}|{{join .Deps " "}}`,
		module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	self := module + "/k8s"
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, rest, _ := strings.Cut(line, "|")
		imports, deps, _ := strings.Cut(rest, "|")
		if path == self || strings.HasPrefix(path, self+"/") {
			continue
		}
		checked++
		for _, imp := range strings.Fields(imports) {
			if isKubernetes(imp) {
				t.Errorf("%s imports %s: only %s and the packages under it may", path, imp, self)
			}
		}
		depList := strings.Fields(deps)
		viaSelf := false
		for _, d := range depList {
			viaSelf = viaSelf || d == self || strings.HasPrefix(d, self+"/")
		}
		if viaSelf {
			continue // it reaches Kubernetes through this package or one under it, as the CLI does
		}
		for _, d := range depList {
			if isKubernetes(d) {
				t.Errorf("%s depends on %s without importing %s", path, d, self)
				break
			}
		}
	}
	if checked < 10 {
		t.Fatalf("go list found only %d other packages: %s", checked, out)
	}
}
