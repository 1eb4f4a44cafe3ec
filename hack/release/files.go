package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"go.yaml.in/yaml/v3"
)

// writeArchive writes the krew archive: the binary as "throttlelab", which
// krew links as kubectl-throttlelab.
func writeArchive(w io.Writer, bin []byte) error {
	return writeTarGz(w, []tarEntry{{name: "throttlelab", mode: 0o755, body: bin}})
}

type tarEntry struct {
	name string
	mode int64
	body []byte
}

// writeTarGz writes entries as a gzipped tar with fixed times and owners.
func writeTarGz(w io.Writer, entries []tarEntry) error {
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.body)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(e.body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

var (
	chartVersionRE    = regexp.MustCompile(`(?m)^version:.*$`)
	chartAppVersionRE = regexp.MustCompile(`(?m)^appVersion:.*$`)
)

// packageChart writes the chart in dir as helm package does (a gzipped tar
// of CHART/...), its Chart.yaml's version the release's without the v and
// its appVersion the release's: the image tag the chart defaults to.
func packageChart(w io.Writer, dir, version string) error {
	name := filepath.Base(dir)
	var entries []tarEntry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel == "Chart.yaml" {
			if !chartVersionRE.Match(b) || !chartAppVersionRE.Match(b) {
				return fmt.Errorf("%s has no version: or appVersion: line to set", p)
			}
			b = chartVersionRE.ReplaceAll(b, []byte("version: "+version[1:]))
			b = chartAppVersionRE.ReplaceAll(b, []byte("appVersion: "+version))
		}
		entries = append(entries, tarEntry{name: name + "/" + filepath.ToSlash(rel), mode: 0o644, body: b})
		return nil
	})
	if err != nil {
		return fmt.Errorf("the chart: %w", err)
	}
	if len(entries) == 0 {
		return fmt.Errorf("the chart %s has no files", dir)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	return writeTarGz(w, entries)
}

// writeChartIndex writes a Helm chart repository's index.yaml for the one
// packaged chart tgz (beside it: its URL is its file name, relative to the
// repository's): the chart's Chart.yaml fields with the release's version
// and appVersion, the package's SHA-256 digest, and created for both the
// entry and the index, so the same release gives the same bytes.
func writeChartIndex(w io.Writer, dir, version, tgz string, created time.Time) error {
	b, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return fmt.Errorf("the chart: %w", err)
	}
	entry := map[string]any{}
	if err := yaml.Unmarshal(b, &entry); err != nil {
		return fmt.Errorf("the chart's Chart.yaml: %w", err)
	}
	name, _ := entry["name"].(string)
	if name == "" {
		return fmt.Errorf("the chart's Chart.yaml has no name")
	}
	digest, err := fileSHA256(tgz)
	if err != nil {
		return err
	}
	at := created.UTC().Format(time.RFC3339)
	entry["version"] = version[1:]
	entry["appVersion"] = version
	entry["digest"] = digest
	entry["created"] = at
	entry["urls"] = []string{filepath.Base(tgz)}
	index := map[string]any{
		"apiVersion": "v1",
		"entries":    map[string]any{name: []any{entry}},
		"generated":  at,
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(index); err != nil {
		return err
	}
	return enc.Close()
}

// writeSBOM writes a CycloneDX JSON SBOM of the binary: the main module and
// every module linked into it, from the build information Go records in
// the binary (what go version -m prints), with their go.sum hashes.
func writeSBOM(w io.Writer, bin, version string) error {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("reading the build information of %s: %w", bin, err)
	}
	purl := func(path, v string) string { return "pkg:golang/" + path + "@" + v }
	main := cdx.Component{Type: cdx.ComponentTypeApplication, Name: bi.Main.Path, Version: version,
		BOMRef: purl(bi.Main.Path, version), PackageURL: purl(bi.Main.Path, version)}
	var comps []cdx.Component
	var refs []string
	for _, m := range bi.Deps {
		if m.Replace != nil {
			m = m.Replace
		}
		c := cdx.Component{Type: cdx.ComponentTypeLibrary, Name: m.Path, Version: m.Version, BOMRef: purl(m.Path, m.Version), PackageURL: purl(m.Path, m.Version)}
		if h, ok := strings.CutPrefix(m.Sum, "h1:"); ok {
			// go.sum's h1: is a SHA-256 over the module's file list, base64.
			c.Properties = &[]cdx.Property{{Name: "go:sum", Value: "h1:" + h}}
		}
		comps = append(comps, c)
		refs = append(refs, c.BOMRef)
	}
	props := []cdx.Property{{Name: "go:version", Value: bi.GoVersion}}
	for _, s := range bi.Settings {
		if s.Key == "GOOS" || s.Key == "GOARCH" || s.Key == "CGO_ENABLED" || s.Key == "-trimpath" {
			props = append(props, cdx.Property{Name: "go:build:" + s.Key, Value: s.Value})
		}
	}
	main.Properties = &props
	bom := cdx.NewBOM()
	bom.Metadata = &cdx.Metadata{Component: &main}
	bom.Components = &comps
	bom.Dependencies = &[]cdx.Dependency{{Ref: main.BOMRef, Dependencies: &refs}}
	return cdx.NewBOMEncoder(w, cdx.BOMFileFormatJSON).SetPretty(true).Encode(bom)
}

// writeKrew writes the krew plugin manifest: one platform per archive,
// with its SHA-256, downloaded from the release's GitHub page.
func writeKrew(w io.Writer, version string, archives map[string]string) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, `apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: throttlelab
spec:
  version: %s
  homepage: https://github.com/throttlelab/throttlelab
  shortDescription: Measure and advise CPU limits (CFS throttling)
  description: |
    throttlelab measures what CPU limits (CFS bandwidth control) do to
    services and advises limits: advise reads the throttlelab agents'
    measured demand, check gates a manifest's proposed limits in CI, and
    k8s render agent prints the per-node agent's manifests.
  platforms:
`, version)
	for _, arch := range arches {
		sum, err := fileSHA256(archives[arch])
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, `  - selector:
      matchLabels:
        os: linux
        arch: %s
    uri: https://github.com/throttlelab/throttlelab/releases/download/%s/%s
    sha256: %s
    bin: throttlelab
    files:
      - from: throttlelab
        to: .
`, arch, version, filepath.Base(archives[arch]), sum)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeSums writes sha256sum's format for every file in dir (but itself and
// files being written), in name order: sha256sum -c SHA256SUMS checks them.
func writeSums(w io.Writer, dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() || e.Name() == "SHA256SUMS" || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		sum, err := fileSHA256(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "%s  %s\n", sum, e.Name()); err != nil {
			return err
		}
	}
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
