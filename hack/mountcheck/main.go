// Command mountcheck runs a command and fails when the host's mounts
// (/proc/self/mountinfo) are not the same after it as before: .ci/run wraps
// make test in it, so a test that leaves a cgroup hierarchy (or any mount)
// changed on the host fails CI.
//
//	go run ./hack/mountcheck make test
//	go run ./hack/mountcheck -before FILE make test   # compare with a snapshot taken earlier
//
// It exits with the command's exit code when the mounts are the same, and 1
// (printing the mounts gone and added) when they are not. Other processes
// that mount or unmount while the command runs are counted too: on a shared
// machine, read a failure with that in mind.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/throttlelab/throttlelab/internal/hostmounts"
)

func main() {
	// The command gets the terminal's signals itself (it is in the same
	// process group); mountcheck waits for it and then still compares.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	var (
		before []byte
		err    error
	)
	if len(args) >= 2 && args[0] == "-before" {
		before, err = os.ReadFile(args[1])
		args = args[2:]
	} else {
		before, err = hostmounts.Read()
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: mountcheck [-before MOUNTINFO-COPY] COMMAND [ARG...]")
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "mountcheck:", err)
		return 1
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			fmt.Fprintln(stderr, "mountcheck:", err)
			return 1
		}
		code = max(exit.ExitCode(), 1)
	}
	after, err := hostmounts.Read()
	if err != nil {
		fmt.Fprintln(stderr, "mountcheck:", err)
		return 1
	}
	if d := hostmounts.Diff(before, after); len(d) > 0 {
		fmt.Fprintf(stderr, "mountcheck: the host's mounts (%s) changed while %q ran; gone (-) and added (+):\n", hostmounts.Path, args)
		for _, l := range d {
			fmt.Fprintln(stderr, l)
		}
		return 1
	}
	fmt.Fprintf(stderr, "mountcheck: the host's mounts (%s) are the same after %q\n", hostmounts.Path, args)
	return code
}
