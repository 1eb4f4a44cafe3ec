package ociimage

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const testVersion = "v0.0.0-imagetest"

// buildBinary builds throttlelab as make image does: static, with a version.
// Without make image's -trimpath, which only changes the file paths inside:
// with it every package is compiled again, where this way the build cache
// already holds them from the VM step's identical build (hack/vmtest).
func buildBinary(t *testing.T) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "throttlelab")
	cmd := exec.Command("go", "build", "-ldflags", "-s -w -X github.com/throttlelab/throttlelab/internal/cli.Version="+testVersion, "-o", out, "../../cmd/throttlelab")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building throttlelab: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestImage builds the image, reads it back as an OCI layout, checks its
// configuration and files, and runs the binary inside it.
func TestImage(t *testing.T) {
	bin := buildBinary(t)
	opt := Options{Binary: bin, Version: testVersion, Arch: runtime.GOARCH, Created: time.Unix(1700000000, 0)}
	var tarball bytes.Buffer
	if err := Write(&tarball, opt); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	untar(t, &tarball, dir)
	for _, f := range []string{"oci-layout", "index.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the layout has no %s: %v", f, err)
		}
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatalf("reading the OCI layout: %v", err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Annotations[RefAnnotation] != "throttlelab:"+testVersion || im.Manifests[0].MediaType != types.OCIManifestSchema1 {
		t.Fatalf("index %+v: want one OCI manifest named throttlelab:%s", im.Manifests, testVersion)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	user, group, _ := strings.Cut(c.User, ":")
	if uid, err := strconv.Atoi(user); err != nil || uid == 0 {
		t.Errorf("user %q: want a numeric non-root user", c.User)
	}
	if gid, err := strconv.Atoi(group); err != nil || gid == 0 {
		t.Errorf("user %q: want a numeric non-root group", c.User)
	}
	if strings.Join(c.Entrypoint, " ") != BinaryPath || cf.OS != "linux" || cf.Architecture != runtime.GOARCH ||
		c.Labels["org.opencontainers.image.version"] != testVersion || !cf.Created.Time.Equal(opt.Created) {
		t.Errorf("config %+v (os %s, arch %s, created %s)", c, cf.OS, cf.Architecture, cf.Created)
	}

	// The config's diff_id is the digest of the uncompressed layer.
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers, %v: want one", len(layers), err)
	}
	diffID, err := layers[0].DiffID()
	if err != nil {
		t.Fatal(err)
	}
	u, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	h := sha256.New()

	// The files: the binary, executable, and no shell.
	tr := tar.NewReader(io.TeeReader(u, h))
	var inImage []byte
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(h.Name, "/sh") || strings.HasSuffix(h.Name, "/bash") || strings.HasSuffix(h.Name, "/busybox") {
			t.Errorf("the image has a shell: %s", h.Name)
		}
		if "/"+h.Name == BinaryPath {
			if h.Mode&0o111 != 0o111 || h.Uid != 0 {
				t.Errorf("%s: mode %o owner %d: want executable by all, owned by root", h.Name, h.Mode, h.Uid)
			}
			if inImage, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	io.Copy(h, u) // the tar's padding
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != diffID.String() || len(cf.RootFS.DiffIDs) != 1 || cf.RootFS.DiffIDs[0] != diffID {
		t.Errorf("the uncompressed layer is %s, the config says %v", got, cf.RootFS.DiffIDs)
	}
	if !bytes.Equal(inImage, bin) {
		t.Fatalf("%s in the image (%d bytes) is not the binary (%d bytes)", BinaryPath, len(inImage), len(bin))
	}
	runFromImage(t, inImage)
}

// runFromImage starts the image's binary as a server on loopback and reads
// its version from /info.
func runFromImage(t *testing.T, bin []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "throttlelab")
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "serve", "--listen", "127.0.0.1:0", "--name", "imagetest", "--burn-calibration", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	line, _ := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if len(f) < 3 || f[0] != "listening" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the image's binary did not start: %q %s", line, stderr.String())
	}
	resp, err := http.Get(f[2] + "/info")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info struct {
		Version string `json:"version"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		t.Fatal(err)
	}
	if info.Version != testVersion {
		t.Errorf("/info says version %q, want %q", info.Version, testVersion)
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
		path := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(path, dir+string(filepath.Separator)) {
			t.Fatalf("%s escapes the layout", h.Name)
		}
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSameBytes: the same binary and options give the same image, byte for
// byte (a small stand-in binary: the bytes do not matter, only their order).
func TestSameBytes(t *testing.T) {
	opt := Options{Binary: append([]byte("\x7fELF"), bytes.Repeat([]byte("throttlelab"), 1000)...), Version: "v1", Arch: "amd64"}
	var a, b bytes.Buffer
	if err := Write(&a, opt); err != nil {
		t.Fatal(err)
	}
	if err := Write(&b, opt); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("two builds of the same image differ")
	}
	opt.Version = "v2"
	var c bytes.Buffer
	if err := Write(&c, opt); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Errorf("images of two versions are the same")
	}
}

func TestRefusesWhatIsNoBinary(t *testing.T) {
	for _, opt := range []Options{
		{Binary: []byte("#!/bin/sh\n"), Version: "v1", Arch: "amd64"},
		{Binary: []byte("\x7fELF...."), Version: "", Arch: "amd64"},
	} {
		if err := Write(io.Discard, opt); err == nil {
			t.Errorf("%q version %q: written", opt.Binary, opt.Version)
		}
	}
}

// TestIndex writes a two-platform image and reads the layout back: its
// index.json names one image index, which holds one manifest per platform,
// each with its platform in the descriptor and in its config, and the same
// binaries give the same bytes.
func TestIndex(t *testing.T) {
	elf := func(tag string) []byte { return append([]byte("\x7fELF"), tag...) }
	opts := []Options{
		{Binary: elf("amd64 binary"), Version: testVersion, Arch: "amd64", Created: time.Unix(1700000000, 0)},
		{Binary: elf("arm64 binary"), Version: testVersion, Arch: "arm64", Created: time.Unix(1700000000, 0)},
	}
	const ref = "ghcr.io/throttlelab/throttlelab:" + testVersion
	var a, b bytes.Buffer
	if err := WriteIndex(&a, ref, opts); err != nil {
		t.Fatal(err)
	}
	if err := WriteIndex(&b, ref, opts); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("the same binaries gave different tars")
	}
	dir := t.TempDir()
	untar(t, &a, dir)
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 || tm.Manifests[0].MediaType != types.OCIImageIndex || tm.Manifests[0].Annotations[RefAnnotation] != ref {
		t.Fatalf("index.json %+v: want one image index named %s", tm.Manifests, ref)
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2 {
		t.Fatalf("the image index has %d manifests, want 2", len(im.Manifests))
	}
	for i, d := range im.Manifests {
		want := opts[i].Arch
		if d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != want || d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("manifest %d: %+v, want linux/%s", i, d, want)
			continue
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil || cf.Architecture != want || cf.OS != "linux" {
			t.Errorf("manifest %d's config: %v %v", i, cf, err)
		}
	}
	if d := im.Manifests[1].Platform; d != nil && d.Variant != "v8" {
		t.Errorf("arm64's variant %q, want v8", d.Variant)
	}
	for _, bad := range [][]Options{nil, {opts[0], opts[0]}, {{Binary: []byte("#!/bin/sh"), Version: "v1", Arch: "amd64"}}} {
		if err := WriteIndex(io.Discard, ref, bad); err == nil {
			t.Errorf("WriteIndex(%d images) took them", len(bad))
		}
	}
}
