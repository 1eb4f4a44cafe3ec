package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/demand"
	"github.com/throttlelab/throttlelab/runtimes"
)

// liveRuntime is the runtime of a live group, read before its sampling.
type liveRuntime struct {
	facts   *advise.RuntimeFacts
	warning string
	live    bool // the input was a live group
}

// advise advises d and, for a live group, adds its runtime.
func (rt liveRuntime) advise(d *advise.Demand, req advise.Request, sampled advise.Sampled) (*advise.Advice, error) {
	a, err := advise.Advise(d, req, sampled)
	if err != nil || !rt.live {
		return a, err
	}
	return a, advise.AddRuntime(a, d, rt.facts, rt.warning, req.Options)
}

// adviseRuntime reads the runtime of a live group's processes once, before
// its sampling begins (not every sample). A group that cannot be found is
// left to demand.Load to report.
func adviseRuntime(in demand.Input) liveRuntime {
	root := in.Root
	if root == "" {
		root = "/"
	}
	var (
		g   *demand.Group
		err error
	)
	switch {
	case in.Pid != 0:
		g, err = demand.FindPid(root, in.Pid)
	case in.Pod != "":
		g, err = demand.FindPod(root, in.Pod)
	case in.CgroupPath != "":
		g, err = demand.FindPath(root, in.CgroupPath)
	default:
		return liveRuntime{}
	}
	if err != nil {
		return liveRuntime{}
	}
	facts, warning := runtimes.ForAdvice(root, groupPids(g.CPUDir, g.Path != "/"))
	return liveRuntime{facts, warning, true}
}

// groupPids lists the processes of the group at dir and, with below, of
// its descendants (a pod's processes are in its containers' groups; the
// root group's descendants are the whole host, not read).
func groupPids(dir string, below bool) []int {
	var pids []int
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && p != dir && !below {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil // a group removed while walked
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
		return nil
	})
	return pids
}
