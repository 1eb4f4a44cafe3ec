package experiment

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/loadgen"
)

// Describe writes the resolved experiment for a person: loads, configs with
// their effective cgroup settings on a machine of cores CPUs, neighbours and
// the run matrix: what throttlelab validate prints. source names the spec
// (a file or a preset).
func Describe(w io.Writer, e *Experiment, source string, cores int) error {
	s := e.Spec
	runs := e.Runs()
	warn := ""
	if n := len(e.Warnings()); n > 0 {
		warn = fmt.Sprintf(", %d warning(s) above", n)
	}
	fmt.Fprintf(w, "%s: valid%s\n", source, warn)
	fmt.Fprintf(w, "experiment %s: %d runs (%d configs x %d loads x %d repeats, %s)\n", e.Metadata.Name, len(runs), len(s.Configs), len(s.Loads), s.Repeats, s.Order)
	if d := e.Metadata.Description; d != "" {
		fmt.Fprintf(w, "  %s\n", d)
	}
	work := s.Workload.Request
	switch loadgen.Kind(work) {
	case loadgen.KindTile:
		work += " " + s.Workload.Tiles.String()
	case loadgen.KindBurn:
		work += " " + s.Workload.Burn.String()
	}
	fmt.Fprintf(w, "\nworkload   %s\n", work)
	fmt.Fprintf(w, "balancer   %s\n", s.Balancer)
	fmt.Fprintf(w, "warmup     %s\n", s.Warmup.Duration)
	fmt.Fprintf(w, "seed       %d\n", s.Seed)
	fmt.Fprintf(w, "reference  %s\n", s.Reference)
	for _, l := range s.Loads {
		fmt.Fprintf(w, "load       %s: %s\n", l.Name, loadLine(l))
	}

	fmt.Fprintf(w, "\nconfigs (cgroup settings as the kubelet writes them; weight: %s mapping; GOMAXPROCS on %d CPUs)\n", s.WeightMapping, cores)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  CONFIG\tINSTANCES\tREQUEST\tLIMIT\tQUOTA/PERIOD us\tCPUS\tBURST us\tSHARES\tWEIGHT\tQOS\tCPUSET\tGOMAXPROCS")
	for _, c := range s.Configs {
		set, qos, err := e.Settings(c)
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", c.Name, c.Instances, dash(c.CPU.Request.String()), dash(c.CPU.Limit.String()),
			quotaPeriod(set), cpusOf(set), burstOf(set), set.Shares, set.Weight, qos, dash(c.CPU.Cpuset.String()), gomaxprocsOf(c, set, cores))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range s.Configs {
		if c.Pod != nil {
			fmt.Fprintf(w, "  %s: pod-level limit %s (request %s) over its %d instances (local backend and simulator only)\n",
				c.Name, c.Pod.CPU.Limit, dash(c.Pod.CPU.Request.String()), c.Instances)
		}
	}

	type nb struct {
		n     Neighbour
		where string
	}
	var all []nb
	for _, n := range s.Neighbours {
		all = append(all, nb{n, "every run"})
	}
	for _, c := range s.Configs {
		for _, n := range c.Neighbours {
			all = append(all, nb{n, "runs of " + c.Name})
		}
	}
	if len(all) > 0 {
		fmt.Fprintln(w, "\nneighbours")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tKIND\tWHAT\tQUOTA/PERIOD us\tSHARES\tWEIGHT\tCPUSET\tBESIDE")
		for _, x := range all {
			if x.n.Kind == "probe" {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t-\t-\t-\t-\t%s\n", x.n.Name, x.n.Kind, neighbourLine(x.n), x.where)
				continue
			}
			set, err := e.NeighbourSettings(x.n)
			if err != nil {
				return err
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", x.n.Name, x.n.Kind, neighbourLine(x.n), quotaPeriod(set), set.Shares, set.Weight, dash(x.n.CPU.Cpuset.String()), x.where)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	fmt.Fprintf(w, "\nruns, in order (%s)\n", s.Order)
	const show = 40
	for i, r := range runs {
		if i == show && len(runs) > show+5 {
			fmt.Fprintf(w, "  ... %d more, to %d %s\n", len(runs)-show-1, len(runs), runs[len(runs)-1].ID())
			break
		}
		fmt.Fprintf(w, "  %d %s\n", i+1, r.ID())
	}
	return nil
}

// loadLine says what a load does, with its defaults filled in.
func loadLine(l Load) string {
	var p []string
	switch loadgen.Mode(l.Mode) {
	case loadgen.ModeImage:
		p = append(p, fmt.Sprintf("image, %d workers (closed loop)", l.Workers))
	case loadgen.ModeRamp:
		p = append(p, fmt.Sprintf("ramp of %s workers, %s per step", l.Ramp, l.Step.Duration))
	case loadgen.ModeRate, loadgen.ModeProbe:
		p = append(p, fmt.Sprintf("%s at %g requests/s, %s arrivals (open loop)", l.Mode, l.Rate, l.Arrivals))
	case loadgen.ModeOnOff:
		each := "back to back while on"
		if l.Rate > 0 {
			each = fmt.Sprintf("%g requests/s while on", l.Rate)
		}
		p = append(p, fmt.Sprintf("onoff, %d sources, on %s / off %s (means), %s", l.Sources, l.On.Duration, l.Off.Duration, each))
	case loadgen.ModeSequential:
		p = append(p, "sequential")
	}
	if l.Duration.Duration > 0 {
		p = append(p, "for "+l.Duration.Duration.String())
	}
	if l.Requests > 0 {
		p = append(p, strconv.FormatInt(l.Requests, 10)+" requests")
	}
	p = append(p, "timeout "+l.Timeout.Duration.String())
	return strings.Join(p, ", ")
}

func neighbourLine(n Neighbour) string {
	switch n.Kind {
	case "noise":
		return fmt.Sprintf("%d spinning thread(s)", n.Threads)
	case "burst":
		return fmt.Sprintf("%d worker(s) busy %s, asleep %s", n.Workers, n.Busy.Duration, n.Sleep.Duration)
	case "probe":
		return fmt.Sprintf("/api at %g requests/s", n.Rate)
	}
	return "an idle server"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func quotaPeriod(s cgroup.Settings) string {
	q := "max"
	if s.QuotaUsec > 0 {
		q = strconv.FormatInt(s.QuotaUsec, 10)
	}
	return q + "/" + strconv.FormatUint(s.PeriodUsec, 10)
}

// cpusOf is the limit in CPUs that takes effect: quota / period.
func cpusOf(s cgroup.Settings) string {
	if s.QuotaUsec <= 0 || s.PeriodUsec == 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(s.QuotaUsec)/float64(s.PeriodUsec), 'g', 4, 64)
}

func burstOf(s cgroup.Settings) string {
	if s.BurstUsec == 0 {
		return "-"
	}
	return strconv.FormatUint(s.BurstUsec, 10) + " (" + (time.Duration(s.BurstUsec) * time.Microsecond).String() + ")"
}

// gomaxprocsOf is a config's GOMAXPROCS policy and what it resolves to on a
// machine of cores CPUs, as the server resolves it.
func gomaxprocsOf(c Config, s cgroup.Settings, cores int) string {
	avail := cores
	if n := c.CPU.Cpuset.Count; n > 0 {
		avail = n
	}
	limit := 0.0
	if s.QuotaUsec > 0 && s.PeriodUsec > 0 {
		limit = float64(s.QuotaUsec) / float64(s.PeriodUsec)
	}
	n, _ := c.Server.GOMAXPROCS.Resolve(cores, avail, limit)
	p := c.Server.GOMAXPROCS.String()
	if c.Server.Single {
		p += ", single"
	}
	if c.Server.GOMAXPROCS.Fixed() > 0 {
		return p
	}
	return fmt.Sprintf("%s: %d", p, n)
}
