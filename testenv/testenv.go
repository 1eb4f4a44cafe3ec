// Package testenv decides, in one place, whether the tests run in CI and what a
// test does when the host lacks something it needs: outside CI it skips and
// says why; in CI it fails, because there every test must run.
//
//	if _, err := exec.LookPath("tmux"); err != nil {
//		testenv.Unavailable(t, "tmux is not installed (apt-get install tmux)")
//	}
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// InCI reports whether the process runs in CI: the CI environment variable is
// set to a true value ("true", "1", as CI services and .ci/run set it).
// "false", "0" and unset mean not in CI.
func InCI() bool {
	v, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && v
}

// Unavailable ends a test that needs something the host lacks: a skip that
// says why, or in CI a failure.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if InCI() {
		t.Fatalf("in CI every test must run: "+format, args...)
	}
	t.Skipf(format, args...)
}

// ProcessCPU is the CPU time (user and system) the test process has used so
// far, as getrusage gives it: benchmarks that time a whole process's work,
// wake-ups and all, take the difference.
func ProcessCPU(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// VMEnv is the environment variable the VM harness (make test-kernels) sets in
// each guest: the kernel release and the cgroup layout, "6.1.0-50-cloud-amd64/v2".
const VMEnv = "THROTTLELAB_VM"

// VM is the kernel and layout of the VM the tests run in ("" on a host): the
// value of VMEnv.
func VM() string { return os.Getenv(VMEnv) }

// ElsewhereUnavailable ends a test that needs what this host cannot give by
// design but the VM matrix gives (pure cgroup v2, another kernel): on a host
// it skips and says so, also in CI, because make test runs it in the VMs;
// inside a VM of the matrix it is Unavailable (a failure in CI).
func ElsewhereUnavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if VM() != "" {
		Unavailable(t, format, args...)
		return
	}
	t.Skipf(format+" (make test runs it in its VMs)", args...)
}

// HelmVersion is the helm that tests run (.ci/run installs it).
const HelmVersion = "v3.22.0"

// Helm returns the path of helm, from PATH or else from go install's
// directory (GOBIN, GOPATH/bin), or ends the test through Unavailable.
func Helm(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	for _, v := range []string{"GOBIN", "GOPATH"} {
		out, err := exec.Command("go", "env", v).Output()
		dir := strings.TrimSpace(string(out))
		if err != nil || dir == "" {
			continue
		}
		if v == "GOPATH" {
			dir = filepath.Join(filepath.SplitList(dir)[0], "bin")
		}
		if p := filepath.Join(dir, "helm"); isExecutable(p) {
			return p
		}
	}
	Unavailable(t, "helm is not installed (go install helm.sh/helm/v3/cmd/helm@%s)", HelmVersion)
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// EmulatedEnv is set ("1") by the VM harness when the guest runs under
// software emulation (qemu's TCG): there the guest's timer interrupts and
// scheduler ticks come late whenever the host deschedules a vCPU thread, so
// the kernel can let a group overrun its quota within one period by far more
// than a tick.
const EmulatedEnv = "THROTTLELAB_VM_EMULATED"

// Emulated reports whether the tests run in a software-emulated VM
// (EmulatedEnv): tests that bound how precisely the kernel holds a group to
// its quota within one period log that bound there instead of failing on it.
func Emulated() bool { return os.Getenv(EmulatedEnv) == "1" }

// Arithmetic ends a test of single-goroutine arithmetic at scale when the
// binary was built with the race detector, which makes such a test many
// times slower and can find nothing in it: make test runs the package again
// without -race, where it runs. The package's concurrent paths must keep a
// test of their own that runs under -race.
func Arithmetic(t testing.TB) {
	t.Helper()
	if Race {
		t.Skip("arithmetic at scale, run by make test without -race (the race detector finds nothing in it and makes it many times slower)")
	}
}
