package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/local"
	"github.com/throttlelab/throttlelab/record"
)

const podRealSpec = `apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata:
  name: podreal
spec:
  workload:
    request: burn
    burn: cpu=5ms
  load:
    mode: rate
    rate: 100
    arrivals: poisson
    duration: 3s
  balancer: random
  configs:
    - name: pod
      instances: 2
      cpu:
        request: 300m
        limit: 300m
      pod:
        cpu:
          limit: 300m
`

// TestPodNestedReal runs one run of a config whose two instances (300m each)
// share a pod-level limit of 300m, with half a core of demand, in real
// cgroups: while it runs the pod's group holds the pod quota and the
// instances' groups sit inside it with their own; the instances' summed use
// stays within the pod's 0.3 CPU (each alone could take 0.3); nothing is left
// behind.
func TestPodNestedReal(t *testing.T) {
	l := cgrouptest.Require(t)
	bin := filepath.Join(t.TempDir(), "throttlelab")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/throttlelab").CombinedOutput(); err != nil {
		t.Fatalf("building throttlelab: %v\n%s", err, out)
	}
	e, err := experiment.Parse([]byte(podRealSpec), "podreal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	mount := "/sys/fs/cgroup"
	if mnt, ok := l.V1["cpu"]; ok {
		mount = mnt.MountPoint
	} else if l.Unified != nil {
		mount = l.Unified.MountPoint
	}
	runID := "podreal-" + strconv.Itoa(os.Getpid())
	b := local.New(local.Options{Binary: bin, RunID: runID})
	if _, err := b.Prepare(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	run := e.Runs()[0]
	podDir := filepath.Join(mount, "throttlelab", runID, fmt.Sprintf("pod-%d-pod", run.Index))
	// Watch the groups while the run goes on: what the pod's group holds.
	var mu sync.Mutex
	seen := map[string]string{}
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			quota := readQuota(podDir)
			kids, _ := filepath.Glob(filepath.Join(podDir, "*", "cgroup.procs"))
			if quota != "" && len(kids) == 2 {
				mu.Lock()
				seen["pod"], seen["child"] = quota, readQuota(filepath.Dir(kids[0]))
				mu.Unlock()
			}
		}
	}()
	dir := t.TempDir()
	rs, err := b.Run(context.Background(), run, dir)
	close(stop)
	<-watched
	if cerr := b.Close(); cerr != nil {
		t.Error(cerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	want := "30000"
	if seen["pod"] != want || seen["child"] != want {
		t.Errorf("while running: the pod group's quota %q, an instance's inside it %q, want %s us each", seen["pod"], seen["child"], want)
	}
	sum := 0.0
	for _, u := range rs.Usage {
		sum += u.Mean
	}
	if len(rs.Usage) != 2 || sum > 0.3+0.05 || sum <= 0 {
		t.Errorf("two instances under a 300m pod used %.3f CPU together (%v), want at most the pod's 0.3 (+0.05)", sum, rs.Usage)
	}
	// The pod group's own record: its quota, and throttled under twice its
	// limit of demand (the instances' own groups are throttled less, or not).
	var pg record.PodGroup
	if b, err := os.ReadFile(filepath.Join(dir, record.PodGroupFile)); err != nil {
		t.Error(err)
	} else if err := json.Unmarshal(b, &pg); err != nil {
		t.Error(err)
	}
	if pg.QuotaUsec != 30000 || pg.PeriodUsec != 100000 || pg.CPUStat.Periods == 0 || pg.CPUStat.ThrottledPeriods == 0 ||
		pg.UsageCores <= 0 || pg.UsageCores > 0.3+0.05 || pg.Run != run.ID() {
		t.Errorf("the pod group's record %+v: want quota 30000/100000, throttled, at most 0.35 CPU", pg)
	}
	t.Logf("the pod group: throttled %d of %d periods, %.3f CPU", pg.CPUStat.ThrottledPeriods, pg.CPUStat.Periods, pg.UsageCores)
	if _, err := os.Stat(filepath.Join(mount, "throttlelab", runID)); !os.IsNotExist(err) {
		t.Errorf("the run's groups are left behind: %v", err)
	}
	t.Logf("instances' summed use %.3f CPU under the pod's 0.3; p99 %.1f ms", sum, rs.Summary.Latency.P99)
}

// readQuota is a group's quota in us: cpu.cfs_quota_us (v1), or the first
// field of cpu.max (v2); "" if unreadable.
func readQuota(dir string) string {
	if b, err := os.ReadFile(filepath.Join(dir, "cpu.cfs_quota_us")); err == nil {
		return strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "cpu.max")); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			return f[0]
		}
	}
	return ""
}
