package watch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
)

// BenchmarkDirEventsIdle is what looking for new groups costs Run at each
// sample when none appeared (a read of the inotify descriptor that finds
// nothing), against, in the same run, the cheapest read the sampler does
// per group (one pread of a counter file kept open). cpu-%-at-10ms is the
// share of one core the look costs at 100 samples a second; look/pread,
// its time over one group's read.
func BenchmarkDirEventsIdle(b *testing.B) {
	d, err := newDirEvents()
	if err != nil {
		b.Skip(err)
	}
	defer d.close()
	dir := b.TempDir()
	d.watch(dir, false)
	p := filepath.Join(dir, "cpuacct.usage")
	if err := os.WriteFile(p, []byte("123456789\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	d.changed(nil) // the file's creation
	f, err := cgroup.OpenCounterFile(p, 64)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var look, pread time.Duration
	for range b.N {
		t0 := time.Now()
		if d.changed(nil) {
			b.Fatal("an event from nowhere")
		}
		t1 := time.Now()
		if _, err := f.Read(); err != nil {
			b.Fatal(err)
		}
		pread += time.Since(t1)
		look += t1.Sub(t0)
	}
	b.ReportMetric(float64(look)/float64(b.N)*100/1e9*100, "cpu-%-at-10ms")
	b.ReportMetric(float64(look)/float64(pread), "look/pread")
}

// TestUnwatchedSaysWhy: a node out of inotify watches still has its groups
// found at each report, and Unwatched says how many directories are not
// watched and which sysctl to raise; once watches can be had again, the next
// Discover watches them and Unwatched is nil.
func TestUnwatchedSaysWhy(t *testing.T) {
	w, err := New(Options{Root: expand(t, "v2-kubepods-systemd")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.events == nil {
		t.Skipf("no inotify here: %v", w.eventsErr)
	}
	if err := w.Unwatched(); err != nil {
		t.Fatalf("every directory is watched, but Unwatched says %v", err)
	}
	groups := len(w.groups)
	w.events.addWatch = func(int, string, uint32) (int, error) { return -1, syscall.ENOSPC }
	if err := w.Discover(); err != nil {
		t.Fatal(err)
	}
	err = w.Unwatched()
	if err == nil || !strings.Contains(err.Error(), "max_user_watches") || !strings.Contains(err.Error(), fmt.Sprintf("%d of the groups' directories", groups)) {
		t.Fatalf("out of watches for %d groups, Unwatched says %v", groups, err)
	}
	if len(w.groups) != groups {
		t.Errorf("%d groups after a Discover without watches, want %d", len(w.groups), groups)
	}
	w.events.addWatch = syscall.InotifyAddWatch
	if err := w.Discover(); err != nil {
		t.Fatal(err)
	}
	if err := w.Unwatched(); err != nil {
		t.Errorf("watches can be had again, but Unwatched says %v", err)
	}
}

// TestRemovedGroupFoundAtOnce: a group's directory removed is an event
// (changed), so that Run walks the tree again within Rediscover and drops
// it, also when no read would find it gone (the gate carries an idle
// group's readings).
func TestRemovedGroupFoundAtOnce(t *testing.T) {
	root := expand(t, "v2-kubepods-systemd")
	const ctr = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podabcdef01_2345_4678_9abc_def012345678.slice/cri-containerd-d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4.scope"
	w, err := New(Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.events == nil {
		t.Skipf("no inotify here: %v", w.eventsErr)
	}
	if w.events.changed(nil) {
		t.Fatal("an event before anything changed")
	}
	if err := os.RemoveAll(filepath.Join(root, "sys/fs/cgroup", ctr)); err != nil {
		t.Fatal(err)
	}
	if !w.events.changed(nil) {
		t.Fatal("no event for a group's directory removed")
	}
	if err := w.Discover(); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.groups[ctr]; ok {
		t.Error("the removed group is still watched after the walk")
	}
}
