package watch

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
)

// Discover finds the groups that appeared since the last call, opens their
// counters, and drops the groups that are gone. It watches every group's
// directories for new ones: Run looks again soon after one is made.
func (w *Watcher) Discover() error {
	refs, err := Discover(w.opts.Root, w.src)
	if err != nil {
		return err
	}
	w.rediscover = false
	if w.events != nil {
		w.events.failed, w.events.err = 0, nil
	}
	seen := make(map[string]bool, len(refs))
	for _, r := range refs {
		seen[r.Path] = true
		// A directory made before its parent's watch was added was not
		// seen by the walk nor by a watch: look again.
		// On v1 the writes to a group's CPU settings are watched too
		// (settingsWritten); on v2 the group's directory holds files the
		// kernel itself notifies of (memory.events, ...), often.
		if w.events.watch(r.CPUDir, w.src.Version == "v1") {
			w.rediscover = true
		}
		if r.AcctDir != r.CPUDir && w.events.watch(r.AcctDir, false) {
			w.rediscover = true
		}
		g, ok := w.groups[r.Path]
		// A v1 group can show up in one hierarchy before the other (a
		// manager makes cpu, then cpuacct): reopen it when its directories
		// change. One that could not be opened is tried again (one whose
		// last read failed keeps its files: its next sample reads again).
		if ok && !g.gone && g.counters != nil && g.ref.CPUDir == r.CPUDir && g.ref.AcctDir == r.AcctDir {
			continue
		}
		if ok {
			g.close()
		}
		w.groups[r.Path] = w.openGroup(r)
	}
	for p, g := range w.groups {
		if !seen[p] || g.gone {
			g.close()
			delete(w.groups, p)
		}
	}
	w.name()
	w.sorted = w.sorted[:0]
	for _, r := range refs {
		if g, ok := w.groups[r.Path]; ok {
			g.every = w.opts.ByNeed.Policy == nil || w.opts.ByNeed.Policy.Picks(g.id) || w.picksPod(g)
			w.sorted = append(w.sorted, g)
		}
	}
	w.openGates()
	w.hotList, w.hotListOK = w.hotList[:0], false
	clear(w.byCPUDir)
	if w.byCPUDir == nil {
		w.byCPUDir = map[string]*group{}
	}
	for _, g := range w.sorted {
		if g.ref.CPUDir != "" {
			w.byCPUDir[g.ref.CPUDir] = g
		}
	}
	return nil
}

// settingsWritten marks the group of directory dir (every group for "")
// as having had its CPU settings written since they were last read
// (dirEvents.changed): its quota may not be the one the rules hold. Only
// groups the Policy picks (the others' settings are not read: Policy.Picks).
func (w *Watcher) settingsWritten(dir string) {
	if dir == "" {
		for _, g := range w.sorted {
			g.written = g.every
		}
		return
	}
	if g := w.byCPUDir[dir]; g != nil && g.every {
		g.written = true
	}
}

// openGates opens the gates (Sample): for each top-level group, the usage
// counter of the lowest directory that holds every group the Policy picks under
// it, in the hierarchy that counts usage; none without ByNeed.Coarse. Gates kept
// keep their file.
func (w *Watcher) openGates() {
	dirs := map[string]string{} // by top-level group
	var tops []string
	if w.opts.ByNeed.Coarse {
		for _, g := range w.sorted {
			d := g.ref.AcctDir
			if !g.every || g.err != nil || d == "" {
				continue
			}
			top, _, _ := strings.Cut(strings.TrimPrefix(g.ref.Path, "/"), "/")
			dir, ok := dirs[top]
			if !ok {
				dirs[top] = d
				tops = append(tops, top)
				continue
			}
			for dir != d && !strings.HasPrefix(d, dir+string(filepath.Separator)) && filepath.Dir(dir) != dir {
				dir = filepath.Dir(dir)
			}
			dirs[top] = dir
		}
	}
	old := map[string]*gate{}
	for _, gt := range w.gates {
		old[gt.dir] = gt
	}
	w.gates = w.gates[:0]
	byTop := map[string]*gate{}
	for _, top := range tops {
		dir := dirs[top]
		gt := old[dir]
		if gt != nil {
			delete(old, dir)
		} else {
			u, err := cgroup.OpenCounters(w.src.Version, "", dir, w.open)
			if err != nil || !u.CountsUsage() {
				if u != nil {
					u.Close()
				}
				continue // no gate: these groups are read at each grid instant
			}
			gt = &gate{dir: dir, counter: u}
		}
		w.gates = append(w.gates, gt)
		byTop[top] = gt
	}
	for _, gt := range old {
		gt.counter.Close()
	}
	for _, g := range w.sorted {
		top, _, _ := strings.Cut(strings.TrimPrefix(g.ref.Path, "/"), "/")
		gt := byTop[top]
		if !g.every || gt != g.gate {
			g.gated = false // readings of another gate
		}
		g.gate = gt
		if !g.every {
			g.gate = nil
		}
	}
}

// Unwatched says what keeps new groups from being found as their
// directories are made (then they are found at each report): nil when every
// directory is watched.
func (w *Watcher) Unwatched() error {
	switch {
	case w.eventsErr != nil:
		return w.eventsErr
	case w.events != nil && w.events.failed > 0:
		return fmt.Errorf("%d of the groups' directories are not watched: %w", w.events.failed, w.events.err)
	}
	return nil
}

// SetNames gives the watcher pod and container names from another source
// than the kubelet's log directories (the Kubernetes API: a node whose
// /var/log/pods the reader cannot open); they are merged with the log
// directories' at the next Discover, and the groups named again. Safe to
// call while Run runs.
func (w *Watcher) SetNames(p *PodNames) {
	w.extraMu.Lock()
	w.extra, w.extraChanged = p, true
	w.extraMu.Unlock()
}

// name identifies new groups, reading the kubelet's log directories again
// when a pod or container is not known yet (or still unnamed) or SetNames
// gave other names.
func (w *Watcher) name() {
	w.extraMu.Lock()
	extra, changed := w.extra, w.extraChanged
	w.extraChanged = false
	w.extraMu.Unlock()
	reread := w.pods == nil || changed
	for _, g := range w.groups {
		if g.id.Kind == "" {
			g.id = Identify(g.ref.Path, w.pods)
		}
		reread = reread || w.pods.Unknown(g.id)
	}
	if !reread {
		return
	}
	w.pods = ReadPodNames(w.opts.Root)
	w.pods.Merge(extra)
	for _, g := range w.groups {
		if w.pods.Unknown(g.id) || g.id.PodUID != "" {
			g.id = Identify(g.ref.Path, w.pods)
		}
	}
}

func (w *Watcher) openGroup(r Ref) *group {
	w.nextID++
	g := &group{ref: r, gid: w.nextID, err: r.Err}
	if g.err != nil {
		return g
	}
	var err error
	if g.counters, err = cgroup.OpenCounters(w.src.Version, r.CPUDir, r.AcctDir, w.open); err != nil {
		g.err = err
		return g
	}
	period := time.Duration(0)
	if r.CPUDir != "" {
		if l, err := cgroup.ReadGroupCPU(r.CPUDir, w.src.Version); err == nil && l.QuotaUsec > 0 {
			period = time.Duration(l.PeriodUsec) * time.Microsecond
			g.quota = time.Duration(l.QuotaUsec) * time.Microsecond
		}
	}
	g.period = period
	g.tracker = cgroup.NewPeakTracker(period, w.peakWindow(period))
	g.psiDir = w.psiDir(g)
	if g.psiDir != "" {
		if p, err := ReadPressure(g.psiDir); err == nil {
			g.pressure = &p
		}
	}
	return g
}

// psiDir is the directory of a group's cpu.pressure: the group itself on
// v2; on a hybrid host its v2 group of the same path, which holds the same
// tasks where their manager places them at one path in every hierarchy.
// "" where no v2 mount holds the group's path.
func (w *Watcher) psiDir(g *group) string {
	m := w.src.PSI
	switch {
	case m == nil:
		return ""
	case w.src.Version == "v2":
		return g.dir()
	case m.Root == "/":
		return filepath.Join(w.opts.Root, m.MountPoint, g.ref.Path)
	case g.ref.Path == m.Root || strings.HasPrefix(g.ref.Path, m.Root+"/"):
		return filepath.Join(w.opts.Root, m.MountPoint, strings.TrimPrefix(g.ref.Path, m.Root))
	}
	return ""
}

// peakWindow is the sliding window of a group's peak when its periods cannot
// be seen: its period if it has a quota, else Options.Window.
func (w *Watcher) peakWindow(period time.Duration) time.Duration {
	if period > 0 {
		return period
	}
	return w.opts.Window
}

func (g *group) close() {
	g.closeSplit()
	if g.counters != nil {
		g.counters.Close()
		g.counters = nil
	}
}

// vanished reports whether a read error means the group was removed: the
// kernel answers ENODEV on a file kept open past its group's rmdir.
func vanished(err error, dir string) bool {
	return errors.Is(err, syscall.ENODEV) || errors.Is(err, fs.ErrNotExist) || (dir != "" && !exists(dir))
}

// picksPod asks a PodPolicy whether pod group g is read at every sample,
// from its quota read here (at each Discover and repickPods, for pod
// groups only: a pod resized in place is picked or dropped at the next).
func (w *Watcher) picksPod(g *group) bool {
	pp, ok := w.opts.ByNeed.Policy.(PodPolicy)
	if !ok || g.id.Kind != KindPod || g.ref.CPUDir == "" || g.err != nil {
		return false
	}
	q, p, err := cgroup.ReadQuota(g.ref.CPUDir, w.src.Version) // the quota alone: asked at every report for every pod
	if err != nil || q <= 0 || p <= 0 {
		return pp.PicksPod(g.id, g.ref.Path, 0)
	}
	return pp.PicksPod(g.id, g.ref.Path, float64(q)/float64(p))
}

// repickPods asks a PodPolicy again whether each pod group is read at
// every sample, between Discovers (Run walks the tree once a minute where
// inotify tells of new groups): each pod's quota read again, one read per
// pod per report. Run calls it after each report's emit.
func (w *Watcher) repickPods() {
	if _, ok := w.opts.ByNeed.Policy.(PodPolicy); !ok {
		return
	}
	changed := false
	for _, g := range w.sorted {
		if g.id.Kind != KindPod || w.opts.ByNeed.Policy.Picks(g.id) {
			continue
		}
		if every := w.picksPod(g); every != g.every {
			g.every, changed = every, true
		}
	}
	if changed {
		w.openGates()
		w.hotList, w.hotListOK = w.hotList[:0], false
	}
}
