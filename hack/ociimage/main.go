// Command ociimage writes throttlelab's container image as an OCI image
// layout tar, without a container engine: `make image` runs it.
//
//	go run ./hack/ociimage -bin bin/throttlelab-linux-amd64 -version v1.2.0 -arch amd64 -out bin/throttlelab-oci.tar
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/throttlelab/throttlelab/internal/ociimage"
)

func main() {
	bin := flag.String("bin", "", "the static throttlelab binary (CGO_ENABLED=0, GOOS=linux)")
	out := flag.String("out", "bin/throttlelab-oci.tar", "where to write the image")
	version := flag.String("version", "", "the binary's version: the image's tag")
	arch := flag.String("arch", "", "the binary's GOARCH")
	created := flag.Int64("created", 0, "creation time in Unix seconds (SOURCE_DATE_EPOCH)")
	flag.Parse()
	if err := run(*bin, *out, *version, *arch, *created); err != nil {
		fmt.Fprintf(os.Stderr, "ociimage: %v\n", err)
		os.Exit(1)
	}
}

func run(bin, out, version, arch string, created int64) error {
	if bin == "" || version == "" || arch == "" || flag.NArg() > 0 {
		return fmt.Errorf("usage: ociimage -bin FILE -version V -arch GOARCH [-out FILE] [-created UNIX]")
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	// Written beside, renamed into place: never half an image at out.
	f, err := os.CreateTemp(filepath.Dir(out), ".oci-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	opt := ociimage.Options{Binary: b, Version: version, Arch: arch, Created: time.Unix(created, 0)}
	if err := ociimage.Write(f, opt); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), out); err != nil {
		return err
	}
	fmt.Printf("wrote %s: throttlelab:%s for linux/%s\n", out, version, arch)
	return nil
}
