// Command pause is the sandbox ("pause") image of the make e2e-k8s rig,
// which has no registry to pull registry.k8s.io/pause from. Run as
//
//	pause -image OUT.tar -ref registry.k8s.io/pause:throttlelab-rig
//
// it writes an OCI image layout tar holding its own (static) executable as
// /pause; run in a container with no arguments it holds the pod's
// namespaces until it is stopped, as the real pause does.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/throttlelab/throttlelab/internal/ociimage"
)

func main() {
	out := flag.String("image", "", "write the image as an OCI layout tar here, and exit")
	ref := flag.String("ref", "registry.k8s.io/pause:throttlelab-rig", "the image's name")
	flag.Parse()
	if *out == "" {
		// The pause container: wait for the end, reap nothing (no children).
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
		<-c
		return
	}
	if err := write(*out, *ref); err != nil {
		fmt.Fprintf(os.Stderr, "pause: %v\n", err)
		os.Exit(1)
	}
}

func write(out, ref string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		return err
	}
	var layer bytes.Buffer
	gz := gzip.NewWriter(&layer)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(bin)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	tw.Write(bin)
	tw.Close()
	gz.Close()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layer.Bytes())), nil }, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), l)
	if err != nil {
		return err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config = v1.Config{Entrypoint: []string{"/pause"}, User: "65535:65535"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := ociimage.WriteImage(f, img, map[string]string{ociimage.RefAnnotation: ref, "io.containerd.image.name": ref}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
