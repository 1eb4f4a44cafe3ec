// Command cgmode runs a command (the real-cgroup tests) once in each of several
// cgroup layouts of this host, and puts the host back as it found it after each,
// also when the command fails or cgmode is interrupted:
//
//	go run ./cgroup/cgrouptest/cgmode -modes v2,v2-cpu,v1-joined -- go test -run Real ./cgroup/...
//	go run ./cgroup/cgrouptest/cgmode -restore   # after a cgmode that was killed outright
//
// The command sees the layout's name in THROTTLELAB_CGROUP_MODE. Where the host
// cannot be switched (not root, another layout to start from) it says so and
// exits 0, unless CI is set: there it is a failure, as a real-cgroup test that
// cannot run is.
//
// cgmode unmounts the v1 cpu hierarchy, so it must not hold that hierarchy's
// files open itself, as Go programs do by default to follow their cgroup's limit.

//go:debug containermaxprocs=0
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
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
	// Signals reach the command (same process group) by themselves; cgmode
	// only has to survive them long enough to restore the host.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	interrupted := false
	failed := []string{}
	for _, m := range strings.Split(*modes, ",") {
		mode := cgrouptest.HostMode(strings.TrimSpace(m))
		restore, err := cgrouptest.SwitchHost(mode)
		if err != nil {
			if errors.Is(err, cgrouptest.ErrCannotSwitch) && os.Getenv("CI") == "" {
				fmt.Fprintf(os.Stderr, "cgmode: skipping the %s layout: %v\n", mode, err)
				continue
			}
			fmt.Fprintf(os.Stderr, "cgmode: %v\n", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "cgmode: cgroup layout %s: %s\n", mode, strings.Join(argv, " "))
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.Env = append(os.Environ(), "THROTTLELAB_CGROUP_MODE="+string(mode))
		err = cmd.Start()
		if err == nil {
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
		wait:
			for {
				select {
				case err = <-done:
					break wait
				case s := <-sigs:
					interrupted = true
					cmd.Process.Signal(s)
				}
			}
		}
		if rerr := restore(); rerr != nil {
			fmt.Fprintf(os.Stderr, "cgmode: restoring the host after %s: %v (run: go run ./cgroup/cgrouptest/cgmode -restore)\n", mode, rerr)
			return 1
		}
		if err != nil {
			failed = append(failed, string(mode))
			fmt.Fprintf(os.Stderr, "cgmode: %s layout: %v\n", mode, err)
		}
		if interrupted {
			return 130
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(os.Stderr, "cgmode: failed in the %s layout(s)\n", strings.Join(failed, ", "))
		return 1
	}
	return 0
}
