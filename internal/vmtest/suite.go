package vmtest

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/testenv"
)

// Suite is one package's real-kernel tests as the guest runs them.
type Suite struct {
	// Pkg is the package's directory relative to the module root: "cgroup".
	Pkg string
	// Run is the -test.run filter: the package's tests that need a real kernel.
	Run string
	// Timeout bounds the package's tests in the guest (-test.timeout).
	Timeout time.Duration
	// Env is extra environment for the test binary (knobs that shorten a
	// test under emulation), NAME=value.
	Env []string
	// Data are directories relative to the module root the tests read
	// (examples/, another package's testdata), copied into the guest at the
	// same place; the package's own testdata always is.
	Data []string
	// Binary says the tests drive the throttlelab binary: it is built
	// statically and its path given in THROTTLELAB_BINARY.
	Binary bool
}

// BinaryEnv names the environment variable that gives end-to-end tests a
// built throttlelab binary instead of building one with the go tool, which
// the guest does not have.
const BinaryEnv = "THROTTLELAB_BINARY"

// Suites are the packages that talk to a real cgroup, with their real tests:
// cgroup's settings, counters, burst and sampler; top, the stall's split
// (top --once -o json) and its --listen metrics; the agent on a small node
// of real groups; advise --cgroup; the server's own group; and short local
// runs of examples/limits.yaml. Tests
// that need chromium or tmux are not here (the guest has neither).
var Suites = []Suite{
	{Pkg: "cgroup", Run: "Real", Timeout: 4 * time.Minute},
	// TestReal* and the stall's split on the kernel (TestStallSplit*Real).
	{Pkg: "watch", Run: "Real", Timeout: 3 * time.Minute},
	// TestRealAgentPredictsAHigherLimit (it samples for 60 s and measures
	// for 30, in wall time, in every cell) runs on the host only; its
	// model, the per-CPU slice replay, is the same code on every kernel, and
	// the v2 per-CPU split it reads is TestRealAgentPerCPU's here.
	{Pkg: "agent", Run: "^TestRealAgent(PerCPU|SeesANewGroupStart)?$", Timeout: 3 * time.Minute},
	// TestSampleRealBurstsUnderLimit is left out: its load is a python3
	// script, and the guest has no python. TestSliceModelKernel's load is
	// the test binary itself: the slice replay against 6.1's and 6.12's
	// throttling of the whole cfs_rq (the host's 6.18 throttles tasks); it
	// skips unless THROTTLELAB_SLICE_KERNEL=1 (make validate-slices passes
	// it with -env).
	{Pkg: "demand", Run: "^(TestSampleReal|TestSliceModelKernel)$", Timeout: 5 * time.Minute},
	{Pkg: "server", Run: "Real", Timeout: 2 * time.Minute},
	{Pkg: "cmd/throttlelab", Run: "^(TestRunExample|TestTopOnceFindsLimitedGroup|TestTopOnceStallSplit|TestTopMetricsEndpoint|TestServeThrottledInRealCgroup)$",
		Timeout: 5 * time.Minute, Data: []string{"examples", "watch/testdata"}, Binary: true},
}

// WithEnv returns ss with env (NAME=value) added to each suite's Env, for
// every test binary in the guest; ss is not changed.
func WithEnv(ss []Suite, env []string) []Suite {
	if len(env) == 0 {
		return ss
	}
	out := make([]Suite, len(ss))
	for i, s := range ss {
		s.Env = append(append([]string(nil), s.Env...), env...)
		out[i] = s
	}
	return out
}

// FindSuites returns the suites of ss whose package is one of pkgs
// ("./cgroup" and "cgroup" both name cgroup).
func FindSuites(ss []Suite, pkgs []string) ([]Suite, error) {
	var out []Suite
	for _, p := range pkgs {
		p = strings.Trim(strings.TrimPrefix(p, "./"), "/")
		found := false
		for _, s := range ss {
			if s.Pkg == p {
				out = append(out, s)
				found = true
			}
		}
		if !found {
			var names []string
			for _, s := range ss {
				names = append(names, s.Pkg)
			}
			return nil, fmt.Errorf("package %q: not in the VM suites (one of %s)", p, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// binName is the test binary's name in the guest.
func (s Suite) binName() string { return path.Base(s.Pkg) + ".test" }

var safeShell = regexp.MustCompile(`^[A-Za-z0-9_./,=:+-]*$`)

// InitScript is the guest's /init: it mounts the basics, brings up
// loopback, mounts the layout named by vmtest.layout= on the kernel's
// command line (one of layouts), exports testenv.EmulatedEnv when the command
// line says vmtest.emulated=1, runs each suite's test binary from its
// package's directory under src (the module's root on the host: test
// helpers that find their files through runtime.Caller find them at the same
// place), and prints the markers the harness reads.
func InitScript(layouts []Layout, suites []Suite, src string) (string, error) {
	if !safeShell.MatchString(src) {
		return "", fmt.Errorf("source directory %q: want letters, digits and ./,=:+- only", src)
	}
	var b strings.Builder
	b.WriteString(`#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin HOME=/tmp TMPDIR=/tmp CI=true
mount -t proc proc /proc
# A probe boot (the harness choosing KVM) only says the guest came up.
if grep -qw vmtest.probe=1 /proc/cmdline; then echo "` + marker + ` probe ok"; poweroff -f; fi
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /tmp
ip link set lo up
layout=
for a in $(cat /proc/cmdline); do case "$a" in vmtest.layout=*) layout=${a#vmtest.layout=};; vmtest.emulated=1) export THROTTLELAB_VM_EMULATED=1;; esac; done
case "$layout" in
`)
	for _, l := range layouts {
		fmt.Fprintf(&b, "%s)\n%s;;\n", l.Name, l.mount)
	}
	fmt.Fprintf(&b, "*) echo \"%s error: unknown layout '$layout'\"; poweroff -f;;\nesac\n", marker)
	// Under qemu's multi-threaded TCG, the kernel patching its code when
	// CFS bandwidth control turns on or off (a static key) while another vCPU
	// runs it can end in an int3 oops (seen on 6.12: enqueue_entity, "Fatal
	// exception in interrupt"). A group that keeps a quota from boot to
	// power-off keeps the key on, so the tests' groups never flip it.
	b.WriteString(`for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
  if grep -qw cpu $d/cgroup.controllers 2>/dev/null; then echo +cpu >$d/cgroup.subtree_control; mkdir $d/vmtest-keep; echo "1000000 1000000" >$d/vmtest-keep/cpu.max; fi
done
if [ -d /sys/fs/cgroup/cpu ]; then mkdir /sys/fs/cgroup/cpu/vmtest-keep; echo 1000000 >/sys/fs/cgroup/cpu/vmtest-keep/cpu.cfs_quota_us; fi
`)
	fmt.Fprintf(&b, "export %s=\"$(uname -r)/$layout\"\n", testenv.VMEnv)
	fmt.Fprintf(&b, "echo \"%s start $(uname -r) $layout nproc=$(nproc)\"\n", marker)
	for _, s := range suites {
		for _, e := range s.Env {
			if !safeShell.MatchString(e) || !strings.Contains(e, "=") {
				return "", fmt.Errorf("suite %s: env %q: want NAME=value of letters, digits and ./,=:+-", s.Pkg, e)
			}
		}
		env := strings.Join(s.Env, " ")
		if s.Binary {
			env = strings.TrimSpace(env + " " + BinaryEnv + "=/bin/throttlelab")
		}
		fmt.Fprintf(&b, "cd '%s/%s' && echo \"%s begin %s\"\n", src, s.Pkg, marker, s.Pkg)
		fmt.Fprintf(&b, "%s /tests/%s -test.v -test.count=1 -test.timeout=%s -test.run '%s' 2>&1\n",
			env, s.binName(), s.Timeout, strings.ReplaceAll(s.Run, "'", `'\''`))
		fmt.Fprintf(&b, "echo \"%s end %s rc=$?\"\n", marker, s.Pkg)
	}
	fmt.Fprintf(&b, "echo \"%s done\"\npoweroff -f\n", marker)
	return b.String(), nil
}

// marker starts every line the guest's init prints for the harness.
const marker = "@@vmtest"
