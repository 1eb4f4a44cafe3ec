// Command release builds a throttlelab release into one directory: `make
// release VERSION=v0.x.y` runs it (docs/install.md).
//
//	go run ./hack/release -version v0.3.0 -out bin/release
//
// It writes, for linux/amd64 and linux/arm64, the static binary with the
// version stamped (throttlelab-VERSION-linux-ARCH) and an archive of it for
// krew (throttlelab_VERSION_linux_ARCH.tar.gz); the container image as one
// multi-platform OCI image index in an OCI layout tar
// (throttlelab-VERSION-oci.tar, named ghcr.io/throttlelab/throttlelab:VERSION);
// the Helm chart packaged with the version (throttlelab-agent-VERSION.tgz,
// without the v) and a Helm chart repository's index beside it
// (index.yaml: the directory served over HTTP is a chart repository,
// helm repo add NAME URL); a CycloneDX SBOM of the binary's modules
// (throttlelab-VERSION.cdx.json); the krew plugin manifest with the
// archives' checksums (plugin.yaml); and SHA256SUMS over all of them. The same
// commit and -created give the same bytes.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/throttlelab/throttlelab/internal/cli"
	"github.com/throttlelab/throttlelab/internal/ociimage"
)

// arches are the platforms released: the nodes platform teams run.
var arches = []string{"amd64", "arm64"}

func main() {
	version := flag.String("version", "", "the release's version, v0.x.y (a git tag)")
	out := flag.String("out", "bin/release", "the directory to write the release into (emptied first)")
	chart := flag.String("chart", "deploy/helm/throttlelab-agent", "the Helm chart's directory")
	created := flag.Int64("created", 0, "the images' creation time in Unix seconds (SOURCE_DATE_EPOCH)")
	flag.Parse()
	if err := run(*version, *out, *chart, *created); err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
}

func run(version, out, chart string, created int64) error {
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: usage: release -version v0.x.y [-out DIR]", flag.Args())
	}
	if !cli.IsRelease(version) {
		return fmt.Errorf("version %q is not a release version: give v0.x.y (make release VERSION=v0.x.y)", version)
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	bins := map[string]string{}
	for _, arch := range arches {
		p := filepath.Join(out, fmt.Sprintf("throttlelab-%s-linux-%s", version, arch))
		if err := build(p, version, arch); err != nil {
			return err
		}
		bins[arch] = p
		fmt.Printf("built %s\n", p)
	}
	return assemble(out, version, chart, time.Unix(created, 0), bins)
}

// build builds the static binary for linux/arch with the version stamped,
// as make image does.
func build(out, version, arch string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X github.com/throttlelab/throttlelab/internal/cli.Version="+version, "-o", out, "./cmd/throttlelab")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building linux/%s: %v\n%s", arch, err, b)
	}
	return nil
}

// assemble writes everything but the binaries (bins: GOARCH to path, in
// out) into out.
func assemble(out, version, chart string, created time.Time, bins map[string]string) error {
	var opts []ociimage.Options
	archives := map[string]string{}
	for _, arch := range arches {
		b, err := os.ReadFile(bins[arch])
		if err != nil {
			return err
		}
		opts = append(opts, ociimage.Options{Binary: b, Version: version, Arch: arch, Created: created})
		a := filepath.Join(out, fmt.Sprintf("throttlelab_%s_linux_%s.tar.gz", version, arch))
		if err := writeFile(a, func(f *os.File) error { return writeArchive(f, b) }); err != nil {
			return err
		}
		archives[arch] = a
	}
	ref := cli.ImageRepository + ":" + version
	img := filepath.Join(out, fmt.Sprintf("throttlelab-%s-oci.tar", version))
	if err := writeFile(img, func(f *os.File) error { return ociimage.WriteIndex(f, ref, opts) }); err != nil {
		return err
	}
	fmt.Printf("wrote %s: %s for linux/%s\n", img, ref, joinArches())
	tgz := filepath.Join(out, fmt.Sprintf("throttlelab-agent-%s.tgz", version[1:]))
	if err := writeFile(tgz, func(f *os.File) error { return packageChart(f, chart, version) }); err != nil {
		return err
	}
	index := filepath.Join(out, "index.yaml")
	if err := writeFile(index, func(f *os.File) error { return writeChartIndex(f, chart, version, tgz, created) }); err != nil {
		return err
	}
	sbom := filepath.Join(out, fmt.Sprintf("throttlelab-%s.cdx.json", version))
	if err := writeFile(sbom, func(f *os.File) error { return writeSBOM(f, bins[arches[0]], version) }); err != nil {
		return err
	}
	plugin := filepath.Join(out, "plugin.yaml")
	if err := writeFile(plugin, func(f *os.File) error { return writeKrew(f, version, archives) }); err != nil {
		return err
	}
	sums := filepath.Join(out, "SHA256SUMS")
	if err := writeFile(sums, func(f *os.File) error { return writeSums(f, out) }); err != nil {
		return err
	}
	fmt.Printf("wrote %s, %s, %s, %s, %s\n", tgz, index, sbom, plugin, sums)
	return nil
}

func joinArches() string {
	s := ""
	for i, a := range arches {
		if i > 0 {
			s += ", linux/"
		}
		s += a
	}
	return s
}

// writeFile writes path through fill, beside and renamed into place: never
// half a file at path.
func writeFile(path string, fill func(*os.File) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".release-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := fill(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
