// Package ociimage builds throttlelab's container image without a container
// engine: one layer holding the static binary (and the few files a
// non-root process expects), written as an OCI image layout in a tar file,
// which skopeo (oci-archive:), podman load, ctr import and crane push read.
// The same binary and options give the same bytes, so the image's digest
// names its content.
//
//	bin, _ := os.ReadFile("bin/throttlelab-linux-amd64") // CGO_ENABLED=0
//	f, _ := os.Create("bin/throttlelab-oci.tar")
//	err := ociimage.Write(f, ociimage.Options{Binary: bin, Version: "v1.2.0", Arch: "amd64"})
package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Where things are in the image, and who runs it.
const (
	// BinaryPath is the binary, the image's entrypoint.
	BinaryPath = "/usr/local/bin/throttlelab"
	// UID is the numeric user and group the image runs as: distroless's
	// "nonroot", the user the Kubernetes manifests ask for too.
	UID = 65532
	// RefAnnotation names the image in the layout's index
	// (org.opencontainers.image.ref.name): what oci-archive:FILE:NAME picks.
	RefAnnotation = "org.opencontainers.image.ref.name"
)

// Options describe the image.
type Options struct {
	// Binary is the throttlelab executable: static (CGO_ENABLED=0), built
	// for linux/Arch.
	Binary []byte
	// Version is the binary's version: the image's tag and its
	// org.opencontainers.image.version label.
	Version string
	// Arch is the GOARCH the binary was built for (amd64, arm64, ...).
	Arch string
	// Created is the image's creation time (the commit's time makes
	// rebuilds identical; zero is 1970).
	Created time.Time
}

// Write writes the image as a tar of an OCI image layout.
func Write(w io.Writer, opt Options) error {
	if len(opt.Binary) < 4 || !bytes.Equal(opt.Binary[:4], []byte("\x7fELF")) {
		return errors.New("the binary is not an ELF executable: build it with GOOS=linux CGO_ENABLED=0")
	}
	if opt.Version == "" || opt.Arch == "" {
		return errors.New("give the binary's version and architecture")
	}
	img, err := image(opt)
	if err != nil {
		return err
	}
	return WriteImage(w, img, map[string]string{RefAnnotation: "throttlelab:" + opt.Version})
}

// WriteIndex writes a multi-platform image as a tar of an OCI image layout:
// one image per Options (one per architecture, the same version), under one
// image index, which the layout's index.json names ref (RefAnnotation) and,
// for ctr import, io.containerd.image.name. A registry given this index
// (skopeo copy --all, crane push --index) serves each node its platform.
func WriteIndex(w io.Writer, ref string, opts []Options) error {
	if len(opts) == 0 {
		return errors.New("give at least one image")
	}
	seen := map[string]bool{}
	var adds []mutate.IndexAddendum
	for _, opt := range opts {
		if seen[opt.Arch] {
			return fmt.Errorf("two images for linux/%s: give one per architecture", opt.Arch)
		}
		seen[opt.Arch] = true
		if len(opt.Binary) < 4 || !bytes.Equal(opt.Binary[:4], []byte("\x7fELF")) {
			return fmt.Errorf("the linux/%s binary is not an ELF executable: build it with GOOS=linux CGO_ENABLED=0", opt.Arch)
		}
		if opt.Version == "" || opt.Arch == "" {
			return errors.New("give each binary's version and architecture")
		}
		img, err := image(opt)
		if err != nil {
			return err
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			MediaType: types.OCIManifestSchema1,
			Platform:  &v1.Platform{OS: "linux", Architecture: opt.Arch, Variant: variant(opt.Arch)},
		}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	dir, err := os.MkdirTemp("", "throttlelab-oci")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefAnnotation: ref, "io.containerd.image.name": ref})); err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	return tarDir(w, dir)
}

// variant is the platform variant registries and runtimes expect for
// GOARCH (arm64 is v8 by convention; the others have none).
func variant(arch string) string {
	if arch == "arm64" {
		return "v8"
	}
	return ""
}

// WriteImage writes img as a tar of an OCI image layout whose index names it
// with annotations (RefAnnotation, and io.containerd.image.name for ctr
// import to keep a name of its own choosing).
func WriteImage(w io.Writer, img v1.Image, annotations map[string]string) error {
	dir, err := os.MkdirTemp("", "throttlelab-oci")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(annotations)); err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	return tarDir(w, dir)
}

// image is the one-layer image of opt.
func image(opt Options) (v1.Image, error) {
	layer, err := rootfs(opt.Binary)
	if err != nil {
		return nil, err
	}
	// Compressed here, once: handed a gzip stream, the library takes it as
	// the blob and works out the config's diff_id (the digest of the tar
	// inside, which a runtime checks as well as the blob's).
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layer)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), l)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", opt.Arch
	cf.Created = v1.Time{Time: opt.Created.UTC()}
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, UID),
		Entrypoint: []string{BinaryPath},
		// A container that is just run serves, reachable from outside it.
		Cmd:          []string{"serve", "--listen", ":8080"},
		Env:          []string{"PATH=/usr/local/bin"},
		WorkingDir:   "/",
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":   "throttlelab",
			"org.opencontainers.image.version": opt.Version,
		},
	}
	cf.History = []v1.History{{Created: cf.Created, CreatedBy: "throttlelab make image", Comment: "static binary, non-root user, no shell"}}
	return mutate.ConfigFile(img, cf)
}

// rootfs is the gzipped layer: the binary, /tmp, and the passwd and group
// entries of the non-root user, every entry with a fixed time and owner.
func rootfs(binary []byte) ([]byte, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, UID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", UID)
	entries := []struct {
		name string
		mode int64
		body []byte
		dir  bool
		uid  int
	}{
		{"etc/", 0o755, nil, true, 0},
		{"etc/group", 0o644, []byte(group), false, 0},
		{"etc/passwd", 0o644, []byte(passwd), false, 0},
		{"home/", 0o755, nil, true, 0},
		{"home/nonroot/", 0o700, nil, true, UID},
		{"tmp/", 0o1777, nil, true, 0},
		{"usr/", 0o755, nil, true, 0},
		{"usr/local/", 0o755, nil, true, 0},
		{"usr/local/bin/", 0o755, nil, true, 0},
		{strings.TrimPrefix(BinaryPath, "/"), 0o755, binary, false, 0},
	}
	var buf bytes.Buffer
	// No name and no time in the gzip header: the same layer, the same bytes.
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarDir writes the files under dir as a tar, in name order, with fixed
// times and owners.
func tarDir(w io.Writer, dir string) error {
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		names = append(names, path)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	tw := tar.NewWriter(w)
	for _, path := range names {
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg, Size: fi.Size(), Format: tar.FormatPAX}
		if fi.IsDir() {
			h.Name, h.Mode, h.Typeflag, h.Size = h.Name+"/", 0o755, tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !fi.IsDir() {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			if err != nil {
				return err
			}
		}
	}
	return tw.Close()
}
