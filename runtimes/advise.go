package runtimes

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/throttlelab/throttlelab/advise"
)

// ForAdvice reads the runtime of a group's processes under root once (call
// it when sampling begins, not every sample) and returns it as
// advise.AddRuntime takes it, with the one warning line saying why the
// runtime, or a part of it, was not read. facts is nil when no process of
// the group runs a known runtime (or the group has none): the group is
// then advised without it, and warning names why.
func ForAdvice(root string, pids []int) (facts *advise.RuntimeFacts, warning string) {
	if len(pids) == 0 {
		return nil, "runtime not read, advised without it: the group had no process when sampling began"
	}
	rt, warns := Detect(root, pids)
	n, tw := RunnableThreads(root, pids)
	if rt.Kind == Unknown {
		return nil, warningLine(rt, append(warns, tw...))
	}
	p := rt.Process
	return &advise.RuntimeFacts{Runtime: string(p.Kind), Version: p.Version, PID: p.PID, Setting: p.Setting.Name, Set: p.Setting.Set,
		From: p.Setting.From, Value: p.Setting.Value, ContainerAware: p.ContainerAware, AwareWhy: p.Aware, CPUs: p.CPUs, Runnable: n,
		Procs: func(limitCores float64) (int, string) { return p.Procs(limitCores, 0) },
		Spell: p.Spell}, warningLine(rt, warns)
}

// Spell writes the parallelism n as the process's setting takes it:
// "GOMAXPROCS=2", "-XX:ActiveProcessorCount=2", "--concurrency=2",
// "worker_processes 2;"; "" for a runtime without a setting.
func (p Process) Spell(n int) string {
	switch name := p.Setting.Name; {
	case name == "":
		return ""
	case p.Kind == Nginx:
		return fmt.Sprintf("%s %d;", name, n)
	default:
		return fmt.Sprintf("%s=%d", name, n)
	}
}

// warningLine is the one line saying why rt, or a part of it, was not
// read, from the warnings about its own process (all of them when it is
// Unknown, one per pid); "" when none.
func warningLine(rt Runtime, warns []Warning) string {
	var mine []Warning
	seen := map[int]bool{} // Detect and RunnableThreads may both warn of one pid
	for _, w := range warns {
		if (rt.Kind == Unknown || w.PID == rt.PID) && !seen[w.PID] {
			seen[w.PID] = true
			mine = append(mine, w)
		}
	}
	if len(mine) == 0 {
		return ""
	}
	why := mine[0].String()
	if errors.Is(mine[0].Err, fs.ErrNotExist) {
		why = fmt.Sprintf("pid %d exited while read", mine[0].PID)
	}
	if len(mine) > 1 {
		why += fmt.Sprintf(" (and %d more: %s)", len(mine)-1, strings.Join(pidList(mine[1:]), ", "))
	}
	if rt.Kind == Unknown {
		return "runtime not read, advised without it: " + why
	}
	return "runtime read in part: " + why
}

func pidList(ws []Warning) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		out = append(out, fmt.Sprintf("pid %d", w.PID))
	}
	return out
}
