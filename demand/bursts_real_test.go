package demand

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// startBursts starts n python3 processes in g (and its usage twins), each
// busy for busy of its own CPU time and then asleep for sleep, over and
// over; pin, if set, is a taskset CPU list. They are killed when the test
// ends.
func startBursts(t *testing.T, g *cgrouptest.Group, n int, busy, sleep time.Duration, pin string) {
	t.Helper()
	var join strings.Builder
	for _, d := range watchtest.WithUsage(t, g) {
		fmt.Fprintf(&join, "echo $$ > '%s/cgroup.procs' && ", d)
	}
	burst := fmt.Sprintf(`import time
while True:
    t0 = time.process_time()
    while time.process_time() - t0 < %g: pass
    time.sleep(%g)`, busy.Seconds(), sleep.Seconds())
	exe := "exec "
	if pin != "" {
		exe += "taskset -c " + pin + " "
	}
	var cmds []*exec.Cmd
	t.Cleanup(func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	})
	for range n {
		cmd := exec.Command("sh", "-c", join.String()+exe+"python3 -c '"+burst+"'")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
}
