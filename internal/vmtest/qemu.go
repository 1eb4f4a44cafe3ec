package vmtest

import (
	"bufio"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Boot describes one guest: what qemu boots and how long it may take.
type Boot struct {
	// Kernel and Initrd are the paths qemu loads.
	Kernel, Initrd string
	// CPUs and MemoryMB size the guest.
	CPUs, MemoryMB int
	// Accel is qemu's -accel: "tcg" (software emulation, works anywhere) or
	// "kvm" where a standard KVM exists.
	Accel string
	// Timeout bounds the whole boot; qemu is killed when it passes.
	Timeout time.Duration
}

// QEMU is the qemu binary the harness runs.
const QEMU = "qemu-system-x86_64"

// Args are qemu's arguments for b: no display, no default devices, the
// serial console on standard output, power-off ends qemu.
func (b Boot) Args(cmdline string) []string {
	cpu := "max"
	if b.Accel == "kvm" {
		cpu = "host"
	}
	return []string{
		"-accel", b.Accel, "-cpu", cpu, "-smp", fmt.Sprint(b.CPUs), "-m", fmt.Sprint(b.MemoryMB),
		"-kernel", b.Kernel, "-initrd", b.Initrd,
		"-append", strings.TrimSpace("console=ttyS0 quiet loglevel=3 panic=-1 " + cmdline),
		"-display", "none", "-nodefaults", "-serial", "stdio", "-no-reboot",
	}
}

// RunWith boots the guest with cmdline added to the kernel's command line and calls line for every line of its serial console,
// as it comes. qemu runs in a process group of its own, dies with the
// harness (parent-death signal) and is killed when ctx ends or the timeout
// passes: no path leaves it running. Run returns after qemu has exited.
func (b Boot) RunWith(ctx context.Context, cmdline string, line func(string)) error {
	ctx, cancel := context.WithTimeout(ctx, b.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, QEMU, b.Args(cmdline)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", QEMU, err)
	}
	readLines(out, line)
	err = cmd.Wait()
	// qemu's own group may hold nothing else, but make sure.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("the guest ran longer than %s: qemu killed", b.Timeout)
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted: qemu killed: %w", ctx.Err())
	case err != nil:
		return fmt.Errorf("%s: %v: %s", QEMU, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// readLines calls line for each line of r without its line ending (the
// serial console ends lines with CR LF).
func readLines(r io.Reader, line func(string)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line(strings.TrimRight(sc.Text(), "\r"))
	}
	// Drain what a too-long line left, so qemu never blocks on a full pipe.
	_, _ = io.Copy(io.Discard, r)
}

// Available says why the host cannot run the matrix ("" when it can): qemu
// and a static busybox must be installed (Debian: qemu-system-x86,
// busybox-static).
func Available(busybox string) string {
	if _, err := exec.LookPath(QEMU); err != nil {
		return QEMU + " not found (apt-get install qemu-system-x86)"
	}
	dyn, err := isDynamicELF(busybox)
	if err != nil {
		return busybox + ": " + err.Error() + " (apt-get install busybox-static)"
	}
	if dyn {
		return busybox + " is not statically linked (apt-get install busybox-static)"
	}
	return ""
}

// isDynamicELF reports whether the ELF file at path has a program
// interpreter, that is, needs a dynamic loader.
func isDynamicELF(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return true, nil
		}
	}
	return false, nil
}
