package runner

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/throttlelab/throttlelab/"

// backends are the backend packages, relative to the module's root: each
// stands beside the others and none may import another (directly or through
// other packages of the module), so that one backend's dependencies (client-go
// for Kubernetes) never reach the rest. Every one must be there.
var backends = []string{"local", "sim", "k8s"}

// moduleImports returns the module's packages that the non-test files in
// dir import, relative to the module's root.
func moduleImports(t *testing.T, root, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if rel, ok := strings.CutPrefix(p, module); ok {
				out = append(out, rel)
			}
		}
	}
	return out
}

// reaches returns every module package pkg depends on, with the path by
// which it first got there.
func reaches(t *testing.T, root, pkg string) map[string]string {
	t.Helper()
	seen := map[string]string{pkg: pkg}
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, dep := range moduleImports(t, root, p) {
			if _, ok := seen[dep]; !ok {
				seen[dep] = seen[p] + " -> " + dep
				queue = append(queue, dep)
			}
		}
	}
	return seen
}

// backendProblems lists, for the module whose root is root, each backend
// that is missing, imports another backend, or is imported by the runner.
func backendProblems(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, b := range backends {
		if _, err := os.Stat(filepath.Join(root, b)); err != nil {
			out = append(out, fmt.Sprintf("backend %s is missing (%v): is the list out of date?", b, err))
			continue
		}
		deps := reaches(t, root, b)
		for _, other := range backends {
			if path, ok := deps[other]; ok && other != b {
				out = append(out, fmt.Sprintf("backend %s imports backend %s: %s", b, other, path))
			}
		}
	}
	// The runner is what every backend plugs into: it imports none of them.
	deps := reaches(t, root, "runner")
	for _, b := range backends {
		if path, ok := deps[b]; ok {
			out = append(out, fmt.Sprintf("the runner imports backend %s: %s", b, path))
		}
	}
	return out
}

func TestBackendsImportNoOtherBackend(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range backendProblems(t, root) {
		t.Error(p)
	}
}

// TestBackendProblemsCanFail: on a made-up module where sim reaches local
// through another package, k8s is missing and the runner imports sim, the
// check names all three.
func TestBackendProblemsCanFail(t *testing.T) {
	root := t.TempDir()
	for dir, imports := range map[string][]string{
		"local": nil, "sim": {"limitmap"}, "limitmap": {"local"}, "runner": {"sim"},
	} {
		src := "package " + dir + "\n"
		for _, imp := range imports {
			src += "import _ \"" + module + imp + "\"\n"
		}
		os.MkdirAll(filepath.Join(root, dir), 0o755)
		if err := os.WriteFile(filepath.Join(root, dir, dir+".go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := strings.Join(backendProblems(t, root), "\n")
	for _, want := range []string{"backend k8s is missing", "backend sim imports backend local: sim -> limitmap -> local", "the runner imports backend sim: runner -> sim"} {
		if !strings.Contains(got, want) {
			t.Errorf("the check missed %q; it said:\n%s", want, got)
		}
	}
}

// TestLayers: the runner reads no report (the CLI hands it one), and no
// backend reaches the runner (a backend plugs into it, never the reverse).
func TestLayers(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if path, ok := reaches(t, root, "runner")["report"]; ok {
		t.Errorf("the runner imports the report: %s", path)
	}
	for _, b := range backends {
		if path, ok := reaches(t, root, b)["runner"]; ok {
			t.Errorf("backend %s imports the runner: %s", b, path)
		}
	}
}

// TestBackendsWriteNoCSV: a run directory's CSV files are the run writer's
// (record.RunWriter): no backend file names one, writes a t_ns header or
// imports a CSV package.
func TestBackendsWriteNoCSV(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range backends {
		files, err := filepath.Glob(filepath.Join(root, b, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, bad := range []string{`.csv"`, `"t_ns`, `"encoding/csv"`} {
				if strings.Contains(string(src), bad) {
					t.Errorf("%s/%s has %s: write the run's CSV files through record.RunWriter", b, filepath.Base(f), bad)
				}
			}
		}
	}
}
