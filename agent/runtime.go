package agent

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/runtimes"
)

// runtimeRead is what the agent read of a container's runtime: at the
// container's discovery (its first report) and again when its processes
// change (an exec, a restart inside the group: Update checks one file and
// one link per container per report where the container used CPU since
// the last check, never per sample; see runtimeUnchanged).
type runtimeRead struct {
	// facts is nil when no process of the group runs a known runtime;
	// warning then says why (and, with facts, why a part was not read).
	facts   *advise.RuntimeFacts
	warning string
	// pids and exe are what the read was of: the group's processes, and
	// the binary of the process that decides the runtime (facts.PID). A
	// change in either reads the runtime again.
	pids []int
	exe  string
	// listed says the group's cgroup.procs was read.
	listed bool
}

// runtimeUnchanged reports whether the runtime read old, checked at a
// report whose container's usage was checkedAt (watch.Totals.UsageSeconds),
// still stands at one where it is usageSeconds, without reading anything:
// the group's processes were listed and the group used no CPU since. A
// process that execs, forks, exits or starts in the group runs in it,
// which charges the group's usage; one moved in and not run yet is read
// at the first report after it ran. So an idle container costs its
// report no file (200 idle containers: 200 opens of cgroup.procs a report
// until 2026-11-29, 5% of the idle agent's CPU by perf).
func runtimeUnchanged(old *runtimeRead, checkedAt, usageSeconds float64) bool {
	return old != nil && old.listed && checkedAt == usageSeconds
}

// groupPIDs reads the processes of the group at cgroup path p under the
// agent's root, from its cgroup.procs in the cpu (else cpuacct) hierarchy.
func (a *Agent) groupPIDs(p string) ([]int, error) {
	src := a.Source()
	m := src.CPU
	if m == nil {
		m = src.Acct
	}
	if m == nil {
		return nil, fmt.Errorf("no cgroup hierarchy to list the processes of %s in", p)
	}
	rel, err := filepath.Rel(m.Root, path.Clean(p))
	if err != nil {
		return nil, fmt.Errorf("group %s is outside the mount of %s: %w", p, m.Root, err)
	}
	b, err := os.ReadFile(filepath.Join(a.cfg.Root, m.MountPoint, rel, "cgroup.procs"))
	if err != nil {
		return nil, fmt.Errorf("listing the processes of %s: %w", p, err)
	}
	pids := parsePIDs(b)
	if len(pids) == 0 && len(bytes.TrimSpace(b)) > 0 {
		return nil, errHiddenPIDs
	}
	return pids, nil
}

func parsePIDs(b []byte) []int {
	var out []int
	for _, f := range bytes.Fields(b) {
		if n, err := strconv.Atoi(string(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// exeOf is the binary /proc/PID/exe links to under root, "" when it
// cannot be read (the process went, or /proc is not the host's).
func exeOf(root string, pid int) string {
	s, _ := os.Readlink(filepath.Join(root, "proc", strconv.Itoa(pid), "exe"))
	return s
}

// readRuntime reads the runtime of the group at path p (runtimes.ForAdvice),
// or returns old when the group's processes and the deciding process's
// binary are those old was read from. It reads one file and at most one
// link when nothing changed.
func (a *Agent) readRuntime(p string, old *runtimeRead) *runtimeRead {
	pids, err := a.groupPIDs(p)
	if err != nil {
		return &runtimeRead{warning: "runtime not read, advised without it: " + err.Error()}
	}
	root := a.procRoot()
	if old != nil && samePIDs(old.pids, pids) && (old.facts == nil || exeOf(root, old.facts.PID) == old.exe) {
		return old
	}
	if len(pids) > 0 && !procVisible(root, pids) {
		return &runtimeRead{pids: pids, listed: true, warning: fmt.Sprintf("runtime not read, advised without it: the host's processes are not under %s: %s",
			filepath.Join(root, "proc"), hostProcHint)}
	}
	facts, warning := runtimes.ForAdvice(root, pids)
	r := &runtimeRead{facts: facts, warning: warning, pids: pids, listed: true}
	if facts != nil {
		r.exe = exeOf(root, facts.PID)
	}
	return r
}

// procVisible reports whether the processes under root's /proc are the
// host's: one of pids is there, or the host's init (pid 1) is. Else every
// process would read as exited while read.
func procVisible(root string, pids []int) bool {
	for _, pid := range append(pids, 1) {
		if _, err := os.Stat(filepath.Join(root, "proc", strconv.Itoa(pid))); err == nil {
			return true
		}
	}
	return false
}

func samePIDs(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// RuntimeInfo is a container's runtime as the agent's metrics and the
// fleet table show it: what runs, the setting that decides its
// parallelism, and that parallelism under the limit now and advised.
type RuntimeInfo struct {
	Runtime string `json:"runtime"`
	Version string `json:"version,omitempty"`
	// Setting is the knob as the runtime spells it ("GOMAXPROCS"); Set
	// whether the process sets it.
	Setting string `json:"setting"`
	Set     bool   `json:"setting_set"`
	// Found is the parallelism the runtime uses under the container's
	// limit now (its setting or its default rule); AtAdvised the one it
	// will use under the advised limit; Recommended the one to set with
	// it (0 when there is no advice yet), RecommendedSetting spelled as the
	// runtime takes it.
	Found              int    `json:"parallelism_found"`
	AtAdvised          int    `json:"parallelism_at_advised_limit,omitempty"`
	Recommended        int    `json:"parallelism_recommended,omitempty"`
	RecommendedSetting string `json:"recommended_setting,omitempty"`
}

// runtimeOf is the runtime advice of c under its limit now and the advised
// one (advisedMilli 0: none yet); nil without a known runtime. c.mu is held.
func runtimeOf(c *container, nowMilli, advisedMilli int64) *advise.RuntimeAdvice {
	if c.rt == nil || c.rt.facts == nil {
		return nil
	}
	rec := advisedMilli
	if rec <= 0 {
		rec = nowMilli
	}
	return advise.RuntimeAt(c.rt.facts, nowMilli, rec)
}

// infoOf is ra as the metrics and the fleet table show it.
func infoOf(ra *advise.RuntimeAdvice, advised bool) *RuntimeInfo {
	if ra == nil {
		return nil
	}
	ri := &RuntimeInfo{Runtime: ra.Runtime, Version: ra.Version, Setting: ra.Setting, Set: ra.Set, Found: ra.Now}
	if advised {
		ri.AtAdvised, ri.Recommended, ri.RecommendedSetting = ra.AtRecommended, ra.Recommended, ra.RecommendedSetting
	}
	return ri
}

// runtimeView sets v's runtime from c's (c.mu is held): the view's
// summary, and the advice's runtime object without the replay (the agent
// keeps no samples to replay with another CPU bound).
func (a *Agent) runtimeView(c *container, v *View) {
	if c.rt != nil {
		v.RuntimeWhy = c.rt.warning
	}
	var advised int64
	if v.Advice != nil {
		advised = v.Advice.Recommendation.LimitMilli
	}
	ra := runtimeOf(c, v.LimitMilli, advised)
	v.Runtime = infoOf(ra, v.Advice != nil)
	if v.Advice != nil {
		v.Advice.Runtime = ra
	}
}

// runtimeMetrics exports v's runtime through g (a gauge of v's labels and
// extra ones).
func runtimeMetrics(v *View, g func(d *prometheus.Desc, val float64, extra ...string)) {
	r := v.Runtime
	if r == nil {
		return
	}
	g(descRuntimeInfo, 1, r.Runtime, r.Version, r.Setting, strconv.FormatBool(r.Set))
	if r.Found > 0 {
		g(descRuntimePar, float64(r.Found), "found")
	}
	if r.AtAdvised > 0 {
		g(descRuntimePar, float64(r.AtAdvised), "advised_limit")
	}
	if r.Recommended > 0 {
		g(descRuntimePar, float64(r.Recommended), "recommended")
	}
}
