// Command check is make e2e-fleet's verdict: it compares the throttled share
// of periods that advise --prometheus predicted (at the current limit, and at
// the advised one the e2e then applied in place) with the share the
// container's cgroup counted (cpu.stat's nr_throttled/nr_periods deltas, read
// on the host), prints a table, and exits 1 when the share after the resize
// is off the prediction by more than max(0.07, 30% of the prediction), or
// when the probe's is: a limit between the old one and the advice, resized
// to after, predicted by the agent's /evaluate from the same demand. With
// -prometheus it also prints the agent's own CPU, memory and missed samples
// on the rig, and fails when a dashboard panel's query returns nothing there.
// With -pod it judges the pod-level step instead (podPhases).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/throttlelab/throttlelab/fleet"
)

func main() {
	advice := flag.String("advice", "", "advise --prometheus -o json output, taken before the resize")
	ns := flag.String("namespace", "", "the workload's namespace")
	ctr := flag.String("container", "", "the workload's container")
	b0 := flag.String("before-start", "", "cpu.stat when the load started")
	b1 := flag.String("before-end", "", "cpu.stat when advise ran")
	a0 := flag.String("after-start", "", "cpu.stat after the resize (settled)")
	a1 := flag.String("after-end", "", "cpu.stat at the end of the measurement")
	appliedMilli := flag.Int64("applied", 0, "the limit the pod's cgroup had after the resize, in millicores")
	probeEval := flag.String("probe-evaluate", "", "the agent's /evaluate at the probe's limit, taken with the advice")
	p0 := flag.String("probe-start", "", "cpu.stat at the probe's limit (settled)")
	p1 := flag.String("probe-end", "", "cpu.stat at the end of the probe's measurement")
	probeMilli := flag.Int64("probe-limit", 0, "the limit the pod's cgroup has during the probe, in millicores")
	prom := flag.String("prometheus", "", "the rig's Prometheus: print the agent's own metrics and run the dashboard's queries there")
	dashboard := flag.String("dashboard", "deploy/grafana/throttlelab.json", "the dashboard whose queries must return data (with -prometheus)")
	pod := flag.String("pod", "", "judge the pod-level step's phases listed in this file (podPhases) instead")
	flag.Parse()
	if *pod != "" {
		if err := podPhases(*pod); err != nil {
			fmt.Fprintln(os.Stderr, "e2e-fleet check:", err)
			os.Exit(1)
		}
		return
	}
	pr := probe{*probeEval, *p0, *p1, *probeMilli}
	err := run(*advice, *ns, *ctr, *b0, *b1, *a0, *a1, *appliedMilli, pr)
	if *prom != "" {
		if rerr := agentOnRig(*prom, *dashboard); rerr != nil && err == nil {
			err = rerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e-fleet check:", err)
		os.Exit(1)
	}
}

// probe is the third phase: the agent's evaluation at a limit, and the
// cpu.stat snapshots taken at it.
type probe struct {
	evaluate, start, end string
	limit                int64
}

func run(advice, ns, ctr, b0, b1, a0, a1 string, applied int64, pr probe) error {
	raw, err := os.ReadFile(advice)
	if err != nil {
		return err
	}
	var out struct {
		Workloads []*fleet.Merged `json:"workloads"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return fmt.Errorf("%s: %v", advice, err)
	}
	var m *fleet.Merged
	for _, w := range out.Workloads {
		if w.Workload.Namespace == ns && w.Container == ctr && w.Worst != nil {
			m = w
		}
	}
	if m == nil {
		return fmt.Errorf("%s: no row for namespace %q container %q", advice, ns, ctr)
	}
	c := m.Worst
	if !c.Current.Known || !c.Advised.Known {
		return fmt.Errorf("%s: no prediction for %s/%s (reason %q)", advice, c.Pod, ctr, c.Reason)
	}
	if applied != c.AdvisedLimitMilli {
		return fmt.Errorf("the pod's cgroup has a limit of %dm after the resize, the advice was %dm", applied, c.AdvisedLimitMilli)
	}
	before, err := share(b0, b1)
	if err != nil {
		return err
	}
	after, err := share(a0, a1)
	if err != nil {
		return err
	}
	fmt.Printf("%-15s %-8s %-10s %-10s %-10s %-10s %s\n", "PHASE", "LIMIT", "PREDICTED", "MEASURED", "DIFF", "TOLERANCE", "PERIODS")
	row := func(phase string, limit int64, pred float64, meas measured) (ok bool) {
		tol := math.Max(0.07, 0.3*pred)
		d := meas.share - pred
		ok = math.Abs(d) <= tol
		fmt.Printf("%-15s %-8s %-10.4f %-10.4f %-+10.4f %-10.4f %d/%d %s\n", phase, strconv.FormatInt(limit, 10)+"m", pred, meas.share, d, tol,
			meas.throttled, meas.periods, map[bool]string{true: "ok", false: "OUTSIDE"}[ok])
		return ok
	}
	row("before resize", c.LimitMilli, c.Current.ThrottledRatio, before) // reported, not the verdict
	okAfter := row("after resize", c.AdvisedLimitMilli, c.Advised.ThrottledRatio, after)
	okProbe := true
	if pr.evaluate != "" {
		var ev struct {
			LimitMilli int64   `json:"limit_millicores"`
			Ratio      float64 `json:"throttled_periods_ratio"`
		}
		raw, err := os.ReadFile(pr.evaluate)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &ev); err != nil || ev.LimitMilli == 0 {
			return fmt.Errorf("%s: not an evaluation (%v): %s", pr.evaluate, err, raw)
		}
		if ev.LimitMilli != pr.limit {
			return fmt.Errorf("the pod's cgroup has a limit of %dm during the probe, the evaluation was of %dm", pr.limit, ev.LimitMilli)
		}
		at, err := share(pr.start, pr.end)
		if err != nil {
			return err
		}
		okProbe = row("probe", ev.LimitMilli, ev.Ratio, at)
	}
	switch {
	case !okAfter:
		return fmt.Errorf("throttled share after the in-place resize is outside max(0.07, 30%%) of the prediction")
	case !okProbe:
		return fmt.Errorf("throttled share at the probe's limit is outside max(0.07, 30%%) of the prediction")
	}
	return nil
}

type measured struct {
	periods, throttled int64
	share              float64
}

// share is the throttled share of periods between two cpu.stat snapshots.
func share(from, to string) (measured, error) {
	s0, err := readStat(from)
	if err != nil {
		return measured{}, err
	}
	s1, err := readStat(to)
	if err != nil {
		return measured{}, err
	}
	m := measured{periods: s1["nr_periods"] - s0["nr_periods"], throttled: s1["nr_throttled"] - s0["nr_throttled"]}
	if m.periods <= 0 {
		return m, fmt.Errorf("%s -> %s: no CFS period counted (is the load running, does the cgroup have a quota?)", from, to)
	}
	m.share = float64(m.throttled) / float64(m.periods)
	return m, nil
}

func readStat(path string) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %v", path, sc.Text(), err)
		}
		st[k] = n
	}
	if _, ok := st["nr_periods"]; !ok {
		return nil, fmt.Errorf("%s: no nr_periods: not a cpu.stat", path)
	}
	return st, sc.Err()
}
