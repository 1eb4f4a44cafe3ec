package experiment

import (
	"strconv"

	"github.com/throttlelab/throttlelab/units"
)

// ServeArgs is the command line of `throttlelab serve` for the instance name
// with these server settings, listening on listen, with the burn calibration
// (iterations per ms) when it is above 0. Every backend starts its servers
// with it, so an instance runs the same way on a host and in a pod.
func (s Server) ServeArgs(name, listen string, burnIterationsPerMs float64) []string {
	args := []string{"serve", "--listen", listen, "--name", name, "--gomaxprocs", s.GOMAXPROCS.String()}
	if burnIterationsPerMs > 0 {
		args = append(args, "--burn-calibration", strconv.FormatFloat(burnIterationsPerMs, 'f', 1, 64))
	}
	if s.Single {
		args = append(args, "--single")
	}
	if s.CPUClock != nil && !*s.CPUClock {
		args = append(args, "--cpu-clock=false")
	}
	return args
}

// NeighbourServer is the server settings of a server neighbour: a
// thread-per-request server with GOMAXPROCS of all host CPUs.
var NeighbourServer = Server{GOMAXPROCS: units.GOMAXPROCSHost}

// ProcessArgs is the command line of a noise or burst neighbour (nil for the
// other kinds: a server neighbour runs ServeArgs, a probe is a load).
func (n Neighbour) ProcessArgs() []string {
	switch n.Kind {
	case "noise":
		return []string{"noise", "--threads", strconv.Itoa(n.Threads)}
	case "burst":
		return []string{"burst", "--workers", strconv.Itoa(n.Workers), "--busy", n.Busy.String(), "--sleep", n.Sleep.String(), "--gomaxprocs", strconv.Itoa(n.Workers)}
	}
	return nil
}
