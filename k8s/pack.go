package k8s

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// MaxResultsBytes bounds what UnpackTo writes: far above any run's records
// (a full Mandelbrot image's 26010 records among them), well below a disk.
const MaxResultsBytes = 8 << 30

// PackDir writes the regular files under dir as a tar stream to w, names
// relative to dir: what throttlelab k8s pack sends from a load Job's pod,
// over exec, as kubectl cp does with tar (the image has no tar of its own).
func PackDir(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Size: fi.Size(), ModTime: fi.ModTime(), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		// Exactly the size in the header: a file still growing is cut there,
		// never corrupts the stream.
		_, err = io.CopyN(tw, f, fi.Size())
		return err
	})
	if err != nil {
		return fmt.Errorf("packing %s: %w", dir, err)
	}
	return tw.Close()
}

// UnpackTo reads a PackDir stream into dir, refusing anything but regular
// files with clean relative names (no .., no absolute paths, no links), and
// returns the names it wrote.
func UnpackTo(r io.Reader, dir string) ([]string, error) {
	tr := tar.NewReader(r)
	var names []string
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names, nil
		}
		if err != nil {
			return names, fmt.Errorf("reading the results stream: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			return names, fmt.Errorf("results stream: %q is not a regular file", h.Name)
		}
		clean := path.Clean(h.Name)
		if clean != h.Name || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
			return names, fmt.Errorf("results stream: refusing the name %q", h.Name)
		}
		if total += h.Size; total > MaxResultsBytes {
			return names, fmt.Errorf("results stream: more than %d bytes", int64(MaxResultsBytes))
		}
		dst := filepath.Join(dir, filepath.FromSlash(clean))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return names, err
		}
		f, err := os.Create(dst)
		if err != nil {
			return names, err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return names, fmt.Errorf("results stream: %s: %w", h.Name, err)
		}
		names = append(names, clean)
	}
}
