package main

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"go.yaml.in/yaml/v3"

	"github.com/throttlelab/throttlelab/internal/ociimage"
	"github.com/throttlelab/throttlelab/testenv"
)

// TestAssemble assembles a release around two stand-in binaries (a small
// program in testdata, an ELF with Go build information) and reads every file
// back: the image index holds both platforms, the krew manifest's checksums
// are its archives', SHA256SUMS lists every file with its checksum, the SBOM
// names the modules linked in, and the packaged chart carries the version.
func TestAssemble(t *testing.T) {
	out := t.TempDir()
	standin := filepath.Join(t.TempDir(), "standin")
	build := exec.Command("go", "build", "-o", standin, "./testdata/standin")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the stand-in binary: %v\n%s", err, msg)
	}
	b, err := os.ReadFile(standin)
	if err != nil {
		t.Fatal(err)
	}
	bins := map[string]string{}
	for _, arch := range arches {
		bins[arch] = filepath.Join(out, "throttlelab-v1.2.3-linux-"+arch)
		if err := os.WriteFile(bins[arch], b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const version = "v1.2.3"
	if err := assemble(out, version, "../../deploy/helm/throttlelab-agent", time.Unix(1700000000, 0), bins); err != nil {
		t.Fatal(err)
	}

	// SHA256SUMS: every other file, each checksum right.
	sums := map[string]string{}
	f, err := os.Open(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		sums[name] = sum
	}
	f.Close()
	ents, _ := os.ReadDir(out)
	for _, e := range ents {
		if e.Name() == "SHA256SUMS" {
			continue
		}
		got, err := fileSHA256(filepath.Join(out, e.Name()))
		if err != nil || sums[e.Name()] != got {
			t.Errorf("SHA256SUMS: %s is %q, the file's is %s (%v)", e.Name(), sums[e.Name()], got, err)
		}
	}
	if len(sums) != len(ents)-1 || len(sums) != 9 {
		t.Errorf("SHA256SUMS lists %d files of %d: %v", len(sums), len(ents)-1, sums)
	}

	// The image: one index, two platforms.
	img, err := os.Open(filepath.Join(out, "throttlelab-v1.2.3-oci.tar"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	untar(t, img, dir)
	img.Close()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, _ := p.ImageIndex()
	tm, err := top.IndexManifest()
	if err != nil || len(tm.Manifests) != 1 || tm.Manifests[0].Annotations[ociimage.RefAnnotation] != "ghcr.io/throttlelab/throttlelab:v1.2.3" {
		t.Fatalf("index.json: %+v %v", tm, err)
	}
	idx, _ := top.ImageIndex(tm.Manifests[0].Digest)
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 2 || im.Manifests[0].Platform.Architecture != "amd64" || im.Manifests[1].Platform.Architecture != "arm64" {
		t.Errorf("the image index: %+v %v", im, err)
	}

	// krew: the archives' checksums, the binary inside each.
	var plugin struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct{ Name string }
		Spec       struct {
			Version   string
			Platforms []struct {
				Selector struct {
					MatchLabels map[string]string `yaml:"matchLabels"`
				}
				URI    string `yaml:"uri"`
				SHA256 string `yaml:"sha256"`
				Bin    string `yaml:"bin"`
			}
		}
	}
	pb, _ := os.ReadFile(filepath.Join(out, "plugin.yaml"))
	if err := yaml.Unmarshal(pb, &plugin); err != nil {
		t.Fatal(err)
	}
	if plugin.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || plugin.Kind != "Plugin" || plugin.Metadata.Name != "throttlelab" || plugin.Spec.Version != version || len(plugin.Spec.Platforms) != 2 {
		t.Fatalf("plugin.yaml: %+v", plugin)
	}
	for i, pl := range plugin.Spec.Platforms {
		arch := arches[i]
		name := "throttlelab_v1.2.3_linux_" + arch + ".tar.gz"
		if pl.Selector.MatchLabels["arch"] != arch || pl.SHA256 != sums[name] || !strings.HasSuffix(pl.URI, "/v1.2.3/"+name) || pl.Bin != "throttlelab" {
			t.Errorf("plugin.yaml's %s: %+v (archive's sha256 %s)", arch, pl, sums[name])
		}
		files := tgzFiles(t, filepath.Join(out, name))
		if string(files["throttlelab"]) != string(b) {
			t.Errorf("%s does not hold the binary as throttlelab: %d files", name, len(files))
		}
	}

	// The SBOM: CycloneDX, the main module at the version, its modules.
	var bom struct {
		BOMFormat string `json:"bomFormat"`
		Metadata  struct {
			Component struct{ Name, Version string }
		}
		Components []struct{ Name, Version, Purl string }
	}
	sb, _ := os.ReadFile(filepath.Join(out, "throttlelab-v1.2.3.cdx.json"))
	if err := json.Unmarshal(sb, &bom); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range bom.Components {
		found = found || (c.Name == "github.com/google/go-containerregistry" && strings.HasPrefix(c.Purl, "pkg:golang/github.com/google/go-containerregistry@v"))
	}
	if bom.BOMFormat != "CycloneDX" || bom.Metadata.Component.Version != version || !found {
		t.Errorf("the SBOM: format %q, main %+v, %d components (go-containerregistry among them: %v)", bom.BOMFormat, bom.Metadata.Component, len(bom.Components), found)
	}

	// The chart: the version and appVersion set.
	chart := tgzFiles(t, filepath.Join(out, "throttlelab-agent-1.2.3.tgz"))
	cy := string(chart["throttlelab-agent/Chart.yaml"])
	if !strings.Contains(cy, "\nversion: 1.2.3\n") || !strings.Contains(cy, "\nappVersion: v1.2.3\n") || chart["throttlelab-agent/templates/daemonset.yaml"] == nil {
		t.Errorf("the packaged chart's Chart.yaml:\n%s", cy)
	}

	// The directory is a chart repository: helm reads its index, checks the
	// package's digest, and renders the chart from it.
	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	defer srv.Close()
	helm := exec.Command(testenv.Helm(t), "template", "r1", "throttlelab-agent", "--repo", srv.URL, "--version", "1.2.3", "-n", "team-a")
	helm.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	rendered, err := helm.CombinedOutput()
	if err != nil || !strings.Contains(string(rendered), `image: "ghcr.io/throttlelab/throttlelab:v1.2.3"`) || !strings.Contains(string(rendered), "namespace: team-a") {
		t.Errorf("helm template from the release's chart repository: %v\n%s", err, rendered)
	}
	if _, ok := sums["index.yaml"]; !ok {
		t.Errorf("SHA256SUMS does not list index.yaml")
	}
}

func TestRunRefusesDevVersion(t *testing.T) {
	for _, v := range []string{"", "dev", "2e904f2-dirty", "v1.2", "1.2.3"} {
		if err := run(v, t.TempDir(), "", 0); err == nil || !strings.Contains(err.Error(), "not a release version") {
			t.Errorf("version %q: %v", v, err)
		}
	}
}

func tgzFiles(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name], _ = io.ReadAll(tr)
	}
}

func untar(t *testing.T, r io.Reader, dir string) {
	t.Helper()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, h.Name)
		if h.Typeflag == tar.TypeDir {
			os.MkdirAll(p, 0o755)
			continue
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		b, _ := io.ReadAll(tr)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
