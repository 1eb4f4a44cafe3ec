package vmtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Kernel is a Debian kernel package the matrix boots: unpacked into a cache
// directory with dpkg-deb, never installed on the host.
type Kernel struct {
	// Series is the short name used in flags and tables: "6.1".
	Series string
	// Package and Version pin the Debian package (apt-get download
	// Package=Version).
	Package, Version string
}

// Kernels are the kernels of the matrix, pinned here and nowhere else: the
// long-term kernels Debian 12 serves (6.1 from bookworm, 6.12 from
// bookworm-security). When Debian stops serving a version, `apt-cache policy
// <package>` names the ones it serves.
var Kernels = []Kernel{
	{Series: "6.1", Package: "linux-image-6.1.0-50-cloud-amd64", Version: "6.1.176-1"},
	{Series: "6.12", Package: "linux-image-6.12.117+deb12-cloud-amd64", Version: "6.12.117-1~deb12u1"},
}

// DefaultCacheDir is where kernels are downloaded and unpacked.
const DefaultCacheDir = "/var/cache/throttlelab/vm"

// ErrMissing marks an error about a piece the host lacks (qemu, busybox, a
// kernel package apt cannot fetch): outside CI the matrix is "not run".
var ErrMissing = errors.New("missing")

// FindKernel returns the kernel of the given series from ks.
func FindKernel(ks []Kernel, series string) (Kernel, error) {
	var names []string
	for _, k := range ks {
		if k.Series == series {
			return k, nil
		}
		names = append(names, k.Series)
	}
	return Kernel{}, fmt.Errorf("kernel %q: not in the matrix (one of %s)", series, strings.Join(names, ", "))
}

// Fetch returns the path of k's vmlinuz, downloading the package with
// apt-get and unpacking it with dpkg-deb into cacheDir the first time.
func Fetch(ctx context.Context, cacheDir string, k Kernel) (string, error) {
	dir := filepath.Join(cacheDir, k.Package+"_"+k.Version)
	if p, err := vmlinuz(dir); err == nil {
		return p, nil
	}
	for _, tool := range []string{"apt-get", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("%w: %s not found (kernel %s is fetched with apt-get download and dpkg-deb -x)", ErrMissing, tool, k.Package)
		}
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(cacheDir, "fetch-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, "apt-get", "download", k.Package+"="+k.Version)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w: apt-get download %s=%s: %v: %s (run apt-get update; if Debian no longer serves it, pin a served version in internal/vmtest/kernels.go: apt-cache policy %s)",
			ErrMissing, k.Package, k.Version, err, lastLine(out), k.Package)
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download %s: %d .deb files in %s, want 1", k.Package, len(debs), tmp)
	}
	unpacked := filepath.Join(tmp, "root")
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", debs[0], unpacked).CombinedOutput(); err != nil {
		return "", fmt.Errorf("dpkg-deb -x %s: %v: %s", debs[0], err, lastLine(out))
	}
	if err := os.Rename(unpacked, dir); err != nil {
		return "", err
	}
	return vmlinuz(dir)
}

func vmlinuz(dir string) (string, error) {
	m, _ := filepath.Glob(filepath.Join(dir, "boot", "vmlinuz-*"))
	if len(m) != 1 {
		return "", fmt.Errorf("%s: %d vmlinuz files, want 1", dir, len(m))
	}
	return m[0], nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}
