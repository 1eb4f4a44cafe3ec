package workload

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/testenv"
)

// cpuHasV3 reports whether this CPU can run GOAMD64=v3 binaries (AVX2, FMA, BMI2...).
func cpuHasV3(t *testing.T) bool {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return false
	}
	for _, f := range []string{" avx2", " fma", " bmi2", " movbe"} {
		if !bytes.Contains(b, []byte(f)) {
			return false
		}
	}
	return true
}

// TestKernelDeterministicAcrossBuilds builds testdata/hashcheck with GOAMD64=v1
// (no FMA) and v3 (the compiler fuses x*y+z into FMA where the spec allows) and
// checks that the real kernel renders identical tiles in both, while a naive kernel
// without the float64 guards does not: that shows the builds really differ in the
// way the guards protect against.
func TestKernelDeterministicAcrossBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries; skipped with -short")
	}
	if runtime.GOARCH != "amd64" {
		t.Skipf("GOAMD64 levels exist only on amd64, this is %s", runtime.GOARCH)
	}
	if !cpuHasV3(t) {
		t.Skip("this CPU cannot run GOAMD64=v3 code (no AVX2/FMA/BMI2)")
	}
	// go test puts its own GOROOT/bin first in the test's PATH.
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.Unavailable(t, "no go command in PATH: %v", err)
	}
	out := map[string]string{}
	for _, level := range []string{"v1", "v3"} {
		bin := filepath.Join(t.TempDir(), "hashcheck-"+level)
		build := exec.Command(goBin, "build", "-o", bin, "./testdata/hashcheck")
		build.Env = append(os.Environ(), "GOAMD64="+level, "CGO_ENABLED=0")
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("GOAMD64=%s go build: %v\n%s", level, err, b)
		}
		b, err := exec.Command(bin).Output()
		if err != nil {
			t.Fatalf("running the GOAMD64=%s build: %v", level, err)
		}
		out[level] = string(b)
	}
	pick := func(s, prefix string) []string {
		var r []string
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			if strings.HasPrefix(l, prefix) {
				r = append(r, l)
			}
		}
		return r
	}
	k1, k3 := pick(out["v1"], "kernel "), pick(out["v3"], "kernel ")
	if len(k1) == 0 || strings.Join(k1, "\n") != strings.Join(k3, "\n") {
		t.Errorf("kernel differs between GOAMD64=v1 and v3:\nv1:\n%s\nv3:\n%s", strings.Join(k1, "\n"), strings.Join(k3, "\n"))
	}
	n1, n3 := pick(out["v1"], "naive "), pick(out["v3"], "naive ")
	if len(n1) == 0 || strings.Join(n1, "\n") == strings.Join(n3, "\n") {
		t.Errorf("the unguarded kernel gave the same tiles with GOAMD64=v1 and v3: the compiler no longer fuses, so this test cannot tell whether the guards work")
	}
	// The v1 build (no FMA anywhere) is the reference: its kernel must match this
	// test binary's own rendering, whatever flags the test was built with.
	for _, l := range k1 {
		var x, y int
		var iters uint64
		var hash string
		if _, err := fmtSscanf(l, "kernel %d,%d %d %s", &x, &y, &iters, &hash); err != nil {
			t.Fatalf("parsing %q: %v", l, err)
		}
		pix, n := RenderTile(Tile{x, y}, nil)
		h := HashPixels(pix)
		if n != iters || hexString(h[:]) != hash {
			t.Errorf("tile %d,%d: this build renders %d %x, the v1 build %d %s", x, y, n, h, iters, hash)
		}
	}
}
