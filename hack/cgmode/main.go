// Command cgmode runs a command (the real-cgroup tests) once in each of several
// cgroup layouts of this host, and puts the host back as it found it after each,
// also when the command fails or cgmode is interrupted:
//
//	go run ./hack/cgmode -modes v2,v2-cpu,v1-joined -- go test -run Real ./cgroup/...
//	go run ./hack/cgmode -restore   # after a cgmode that was killed outright
//
// The command sees the layout's name in THROTTLELAB_CGROUP_MODE. What happens
// when a layout cannot be made:
//   - the host is not one cgmode may switch (not root, another layout to start
//     from): it says so and exits 0, except in CI, where it is a failure, as a
//     real-cgroup test that cannot run is;
//   - the kernel does not free the old hierarchy within about a minute (a host
//     fault no code here controls): the host is restored, the remaining layouts
//     are not tried (they need the same hierarchy freed), and cgmode ends with
//     one marked line per layout not run, "NOT RUN ON THIS HOST: <layout>:
//     <what it waited for and saw>", and exits 0, in CI too;
//   - the command fails in a layout that was made: cgmode exits 1.
//
// SIGINT, SIGTERM and SIGHUP end it promptly: a switch stops waiting, the
// command's process group is signalled (and killed after 10 s), the host is
// restored, and cgmode exits 130.
//
// cgmode unmounts the v1 cpu hierarchy, so it must not hold that hierarchy's
// files open itself, as Go programs do by default to follow their cgroup's limit.

//go:debug containermaxprocs=0
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/testenv"
)

func main() {
	os.Exit(run())
}

func run() int {
	modes := flag.String("modes", "v2,v2-cpu,v1-joined", "comma-separated layouts to run the command in: "+fmt.Sprint(cgrouptest.HostModes))
	restoreOnly := flag.Bool("restore", false, "only bring the host back to v1-split (after a cgmode that was killed outright)")
	flag.Parse()
	cgrouptest.Log = os.Stderr
	if *restoreOnly {
		if err := cgrouptest.RestoreHost(); err != nil {
			fmt.Fprintln(os.Stderr, "cgmode:", err)
			return 1
		}
		return 0
	}
	argv := flag.Args()
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "cgmode: no command given: cgmode -modes v2 -- go test ./cgroup/...")
		return 2
	}
	var layouts []cgrouptest.HostMode
	for _, m := range strings.Split(*modes, ",") {
		layouts = append(layouts, cgrouptest.HostMode(strings.TrimSpace(m)))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	r := runner{switchHost: cgrouptest.SwitchHost, inCI: testenv.InCI(), log: os.Stderr, grace: 10 * time.Second}
	return r.run(ctx, layouts, argv)
}

// runner runs a command in each layout; its parts are fields so that a test
// can give it a host that cannot switch.
type runner struct {
	switchHost func(context.Context, cgrouptest.HostMode) (func() error, error)
	inCI       bool
	log        io.Writer
	// grace is how long an interrupted command has between SIGTERM and SIGKILL.
	grace time.Duration
}

// run returns the exit code: 0 when the command passed in every layout that
// was made (layouts not run because of a host fault are listed, marked, at
// the end), 1 when it failed in one or a layout could not be made for a
// reason of this project's (or, in CI, of the host's set-up), 130 when
// interrupted.
func (r runner) run(ctx context.Context, layouts []cgrouptest.HostMode, argv []string) int {
	var failed, notRun []string
	var fault *cgrouptest.HostFault
	code := 0
	for _, mode := range layouts {
		if fault != nil {
			notRun = append(notRun, fmt.Sprintf("%s: not tried after %s could not be made (it needs the same hierarchy freed)", mode, fault.Mode))
			continue
		}
		restore, err := r.switchHost(ctx, mode)
		switch {
		case ctx.Err() != nil:
			// SwitchHost restored the host if it failed; if it had just
			// finished, restore it here.
			if err == nil && restoreOrSay(r.log, mode, restore) != nil {
				return 1
			}
			fmt.Fprintf(r.log, "cgmode: interrupted while switching to %s (host restored)\n", mode)
			return 130
		case errors.As(err, &fault):
			fmt.Fprintf(r.log, "cgmode: %v (the host was restored)\n", err)
			notRun = append(notRun, fmt.Sprintf("%s: %v", mode, err))
			continue
		case errors.Is(err, cgrouptest.ErrCannotSwitch) && !r.inCI:
			fmt.Fprintf(r.log, "cgmode: skipping the %s layout: %v\n", mode, err)
			continue
		case err != nil:
			fmt.Fprintf(r.log, "cgmode: %v\n", err)
			code = 1
			continue
		}
		fmt.Fprintf(r.log, "cgmode: cgroup layout %s: %s\n", mode, strings.Join(argv, " "))
		err = r.command(ctx, mode, argv)
		if rerr := restoreOrSay(r.log, mode, restore); rerr != nil {
			return 1
		}
		if ctx.Err() != nil {
			fmt.Fprintf(r.log, "cgmode: interrupted in the %s layout (host restored)\n", mode)
			return 130
		}
		if err != nil {
			failed = append(failed, string(mode))
			fmt.Fprintf(r.log, "cgmode: %s layout: %v\n", mode, err)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(r.log, "cgmode: FAILED in the %s layout(s)\n", strings.Join(failed, ", "))
		code = 1
	}
	// Last, so that it is the end of CI's output: what was not tested here.
	for _, line := range notRun {
		fmt.Fprintf(r.log, "cgmode: NOT RUN ON THIS HOST: %s\n", line)
	}
	return code
}

// command runs argv in its own process group, so that an interruption reaches
// every process it started (go test's test binaries too), not just the first.
func (r runner) command(ctx context.Context, mode cgrouptest.HostMode, argv []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "THROTTLELAB_CGROUP_MODE="+string(mode))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	pgid := cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(r.grace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		syscall.Kill(-pgid, syscall.SIGKILL)
		return <-done
	}
}

func restoreOrSay(w io.Writer, mode cgrouptest.HostMode, restore func() error) error {
	if err := restore(); err != nil {
		fmt.Fprintf(w, "cgmode: restoring the host after %s: %v (run: go run ./hack/cgmode -restore)\n", mode, err)
		return err
	}
	return nil
}
