// Command vmtest runs the real-kernel tests inside VMs: each Debian kernel of
// the matrix booted under qemu with each cgroup layout (see internal/vmtest),
// and prints the table kernel x layout x package. The host's cgroups are
// never touched.
//
//	go run ./hack/vmtest                                  # the full matrix (make test-kernels)
//	go run ./hack/vmtest -layouts v2                      # pure v2 on every kernel (make test)
//	go run ./hack/vmtest -kernels 6.12 -layouts v1-joined -pkgs top   # one cell, one package
//
// With -accel auto (the default) it boots under KVM where the host has a
// standard one (a /dev/kvm that is not PVM's, and a probe boot under it comes
// up), and under software emulation (tcg) elsewhere; the table names each
// cell's accelerator.
//
// It exits 1 when a test fails or a cell does not finish, printing the
// failing packages' output, and when the host's mounts (/proc/self/mountinfo)
// are not the same after the matrix as before. When qemu, a static busybox or a kernel package
// is missing it prints one "vmtest: not run: <why>" line and exits 0, except
// in CI (CI=true), where that is a failure. SIGINT, SIGTERM and SIGHUP kill
// the running qemu and end it with exit 130.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/throttlelab/throttlelab/internal/hostmounts"
	"github.com/throttlelab/throttlelab/internal/vmtest"
	"github.com/throttlelab/throttlelab/testenv"
)

func main() { os.Exit(run()) }

func run() int {
	var (
		kernels = flag.String("kernels", "all", "kernel series to boot, comma-separated ("+seriesList()+"), or all")
		layouts = flag.String("layouts", "all", "cgroup layouts, comma-separated ("+layoutList()+"), or all")
		pkgs    = flag.String("pkgs", "all", "packages whose real tests run, comma-separated, or all")
		cache   = flag.String("cache", vmtest.DefaultCacheDir, "directory the kernels are downloaded and unpacked into")
		busybox = flag.String("busybox", "/bin/busybox", "a statically linked busybox (Debian: busybox-static)")
		accel   = flag.String("accel", "auto", "qemu accelerator: tcg (software emulation), kvm (a standard KVM host), or auto (kvm where a probe boot under a standard KVM comes up, else tcg)")
		cpus    = flag.Int("cpus", 2, "the guest's vCPUs")
		mem     = flag.Int("mem", 1024, "the guest's memory in MiB")
		verbose = flag.Bool("v", false, "print every package's output, not only the failing ones")
		work    = flag.String("work", "", "directory for the built binaries and initramfs (default: a temporary one, removed after)")
		envs    envFlag
	)
	flag.Var(&envs, "env", "NAME=value for every test binary in the guest (repeatable): a knob such as THROTTLELAB_SLICE_KERNEL=1")
	flag.Parse()
	m := vmtest.Matrix{Root: ".", CacheDir: *cache, Busybox: *busybox, Accel: *accel, CPUs: *cpus, MemoryMB: *mem, Log: os.Stderr}
	var err error
	if m.Kernels, err = pick(*kernels, vmtest.Kernels, vmtest.FindKernel); err != nil {
		return usage(fmt.Errorf("-kernels: %w", err))
	}
	if m.Layouts, err = pick(*layouts, vmtest.Layouts, vmtest.FindLayout); err != nil {
		return usage(fmt.Errorf("-layouts: %w", err))
	}
	m.Suites = vmtest.Suites
	if *pkgs != "all" {
		if m.Suites, err = vmtest.FindSuites(vmtest.Suites, strings.Split(*pkgs, ",")); err != nil {
			return usage(fmt.Errorf("-pkgs: %w", err))
		}
	}
	m.Suites = vmtest.WithEnv(m.Suites, envs)
	if *accel != "tcg" && *accel != "kvm" && *accel != "auto" {
		return usage(fmt.Errorf("-accel %q: want tcg, kvm or auto", *accel))
	}
	if why := vmtest.Available(*busybox); why != "" {
		return notRun(why)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	dir := *work
	if dir == "" {
		if dir, err = os.MkdirTemp("", "throttlelab-vmtest-"); err != nil {
			fmt.Fprintln(os.Stderr, "vmtest:", err)
			return 1
		}
		defer os.RemoveAll(dir)
	}
	// Fetch the kernels first: a missing one is "not run", before minutes of building.
	for _, k := range m.Kernels {
		if _, err := vmtest.Fetch(ctx, m.CacheDir, k); err != nil {
			if errors.Is(err, vmtest.ErrMissing) {
				return notRun(err.Error())
			}
			fmt.Fprintln(os.Stderr, "vmtest:", err)
			return 1
		}
	}
	// The guests never touch the host: its mounts are the same after the
	// matrix as before, or the run fails.
	mounts, err := hostmounts.Read()
	if err != nil {
		fmt.Fprintln(os.Stderr, "vmtest:", err)
		return 1
	}
	start := time.Now()
	initrd, err := m.Prepare(ctx, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vmtest:", err)
		return 1
	}
	if m.Accel == "auto" {
		vmlinuz, err := vmtest.Fetch(ctx, m.CacheDir, m.Kernels[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, "vmtest:", err)
			return 1
		}
		b := vmtest.Boot{Kernel: vmlinuz, Initrd: initrd, CPUs: m.CPUs, MemoryMB: m.MemoryMB, Accel: "kvm", Timeout: vmtest.ProbeTimeout}
		var why string
		m.Accel, why = vmtest.DefaultKVMHost.PickAccel(ctx, func(ctx context.Context) error { return vmtest.Probe(ctx, b) })
		fmt.Fprintf(os.Stderr, "vmtest: accelerator %s: %s\n", m.Accel, why)
	}
	cells, err := m.Run(ctx, initrd)
	vmtest.WriteFailures(os.Stdout, cells, *verbose)
	fmt.Println()
	_ = vmtest.WriteTable(os.Stdout, cells)
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "vmtest: interrupted; every qemu it started has been killed")
		return 130
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vmtest:", err)
		return 1
	}
	after, err := hostmounts.Read()
	if err != nil {
		fmt.Fprintln(os.Stderr, "vmtest:", err)
		return 1
	}
	hostSays := "the host's mounts unchanged"
	changed := hostmounts.Diff(mounts, after)
	if len(changed) > 0 {
		fmt.Fprintf(os.Stderr, "vmtest: the host's mounts (%s) changed during the matrix; gone (-) and added (+):\n%s\n", hostmounts.Path, strings.Join(changed, "\n"))
		hostSays = "the host's mounts CHANGED"
	}
	failed := 0
	for _, c := range cells {
		if !c.Passed() {
			failed++
		}
	}
	fmt.Printf("vmtest: %d of %d cells passed in %.0f s (kernels %s; layouts %s; accelerator %s); %s\n",
		len(cells)-failed, len(cells), time.Since(start).Seconds(), *kernels, *layouts, m.Accel, hostSays)
	if failed > 0 || len(changed) > 0 {
		return 1
	}
	return 0
}

func pick[T any](list string, all []T, find func([]T, string) (T, error)) ([]T, error) {
	if list == "all" {
		return all, nil
	}
	var out []T
	for _, name := range strings.Split(list, ",") {
		v, err := find(all, strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func notRun(why string) int {
	if testenv.InCI() {
		fmt.Fprintln(os.Stderr, "vmtest: in CI the VM tests must run:", why)
		return 1
	}
	fmt.Println("vmtest: not run:", why)
	return 0
}

func usage(err error) int {
	fmt.Fprintln(os.Stderr, "vmtest:", err)
	return 2
}

func seriesList() string {
	var s []string
	for _, k := range vmtest.Kernels {
		s = append(s, k.Series)
	}
	return strings.Join(s, ", ")
}

func layoutList() string {
	var s []string
	for _, l := range vmtest.Layouts {
		s = append(s, l.Name)
	}
	return strings.Join(s, ", ")
}

// envFlag is a repeatable -env NAME=value.
type envFlag []string

func (e *envFlag) String() string { return strings.Join(*e, " ") }

func (e *envFlag) Set(v string) error {
	if name, _, ok := strings.Cut(v, "="); !ok || name == "" {
		return fmt.Errorf("%q: want NAME=value", v)
	}
	*e = append(*e, v)
	return nil
}
