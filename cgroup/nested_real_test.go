package cgroup_test

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
)

// TestNestedGroupReal nests two groups of 0.4 CPU each inside a pod group of
// 0.5 CPU, as the kubelet nests containers in a pod, and spins a process in
// each child: the pod's quota binds (the pod is throttled), the children's
// own quotas do not (each gets about 0.25 of its 0.4), the children's usage
// summed stays within the pod's quota, and cleanup leaves nothing behind.
func TestNestedGroupReal(t *testing.T) {
	cgrouptest.Require(t)
	m, err := cgroup.NewManager("/", fmt.Sprintf("nested-%d", os.Getpid()), false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := m.Cleanup(true); err != nil {
			t.Error(err)
		}
	}()
	const period = 100000
	pod, err := m.NewGroup("pod", cgroup.Settings{QuotaUsec: 50000, PeriodUsec: period, Shares: 512, Weight: 20})
	if err != nil {
		t.Fatal(err)
	}
	var kids []*cgroup.Group
	var cmds []*exec.Cmd
	var waits []chan struct{}
	for i := 0; i < 2; i++ {
		g, err := m.NewChildGroup(pod, fmt.Sprintf("c%d", i), cgroup.Settings{QuotaUsec: 40000, PeriodUsec: period, Shares: 256, Weight: 10})
		if err != nil {
			t.Fatal(err)
		}
		kids = append(kids, g)
	}
	if _, err := m.NewChildGroup(pod, "bad", cgroup.Settings{QuotaUsec: -1, Cpus: "0"}); err == nil {
		t.Error("a nested group with a cpuset was made")
	}
	for _, g := range kids {
		cmd := exec.Command("sh", "-c", "for d in \"$@\"; do echo $$ > \"$d/cgroup.procs\"; done; while :; do :; done", "sh")
		for _, d := range g.Dirs {
			cmd.Args = append(cmd.Args, d)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		waits = append(waits, done)
	}
	// Both spinning inside their groups before anything is measured.
	for _, g := range kids {
		for deadline := time.Now().Add(10 * time.Second); len(g.Procs()) == 0 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if _, err := m.NewChildGroup(kids[0], "under-busy", cgroup.Settings{QuotaUsec: -1}); err == nil {
		t.Error("a group was nested in a group holding a process")
	}
	podBefore, _ := pod.Stat()
	var kidsBefore []cgroup.CPUStat
	var usedBefore time.Duration
	for _, g := range kids {
		st, _ := g.Stat()
		kidsBefore = append(kidsBefore, st)
		u, _ := g.Usage()
		usedBefore += u
	}
	start := time.Now()
	for deadline := start.Add(20 * time.Second); ; {
		st, err := pod.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if d := st.Sub(podBefore); (d.Periods >= 10 && d.ThrottledPeriods >= 5) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	podAfter, _ := pod.Stat()
	var used time.Duration
	kidThrottled := int64(0)
	for i, g := range kids {
		st, _ := g.Stat()
		kidThrottled += int64(st.Sub(kidsBefore[i]).ThrottledPeriods)
		u, _ := g.Usage()
		used += u
	}
	used -= usedBefore
	wall := time.Since(start)
	d := podAfter.Sub(podBefore)
	if d.ThrottledPeriods < 5 {
		t.Errorf("two spinning children under a 0.5-CPU pod: the pod's cpu.stat delta %+v, want it throttled (a busy host may leave it short of CPU: rerun when it is quiet)", d)
	}
	// The children get about 0.25 CPU each: their own 0.4 rarely binds.
	if kidThrottled*2 > int64(d.ThrottledPeriods) {
		t.Errorf("children throttled in %d periods against the pod's %d: their own quotas bind, not the pod's", kidThrottled, d.ThrottledPeriods)
	}
	// Summed usage within the pod quota over the wall time, with two periods' slack.
	if limit := time.Duration(float64(wall)*0.5) + 2*50*time.Millisecond; used > limit {
		t.Errorf("children used %s in %s, over the pod's 0.5 CPU (%s with slack)", used, wall, limit)
	}
	if used <= 0 {
		t.Errorf("children used %s: nothing ran", used)
	}
	t.Logf("over %s: pod throttled %d of %d periods, children throttled %d, children used %s (%.2f CPU)", wall.Round(time.Millisecond), d.ThrottledPeriods, d.Periods, kidThrottled, used, used.Seconds()/wall.Seconds())
	dirs := append([]string{}, pod.Dirs["cpu"], kids[0].Dirs["cpu"], kids[1].Dirs["cpu"])
	if err := m.Cleanup(true); err != nil {
		t.Fatal(err)
	}
	for i, c := range cmds {
		select {
		case <-waits[i]:
		case <-time.After(10 * time.Second):
			t.Errorf("process %d survived the cleanup", c.Process.Pid)
			c.Process.Kill()
		}
	}
	for _, dir := range dirs {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s left behind", dir)
		}
	}
}
