package k8s

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestParsePodSample picks the pod's own cgroup out of the kubelet's
// cAdvisor metrics: not a container's, not the sandbox's (its cgroup is
// under the pod's), not another namespace's pod of the same name; on the
// systemd driver's slice names too; and says so when the pod has none.
func TestParsePodSample(t *testing.T) {
	b, err := os.ReadFile("testdata/cadvisor/pod-limit.txt")
	if err != nil {
		t.Fatal(err)
	}
	const uid = "0b6c1f52-7d1e-4c57-9a0e-2f1d3c4b5a69"
	systemd := strings.ReplaceAll(string(b), "/kubepods/burstable/pod"+uid, "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"+strings.ReplaceAll(uid, "-", "_")+".slice")
	for name, text := range map[string]string{"cgroupfs": string(b), "systemd": systemd} {
		s, err := parsePodSample([]byte(text), "throttlelab-pod-limit", "pod", uid)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if s.stat.Periods != 161 || s.stat.ThrottledPeriods != 23 || s.stat.ThrottledUsec != 412345 || s.usageUsec != 4250000 ||
			s.quotaUsec != 80000 || s.periodUsec != 100000 || !s.at.Equal(time.UnixMilli(1795939200123)) {
			t.Errorf("%s: %+v", name, s)
		}
	}
	if _, err := parsePodSample(b, "throttlelab-pod-limit", "pod", "11111111-7d1e-4c57-9a0e-2f1d3c4b5a69"); err == nil || !strings.Contains(err.Error(), "no CFS series") {
		t.Errorf("another pod's UID: %v", err)
	}
	if _, err := parsePodSample([]byte("not {metrics"), "ns", "pod", uid); err == nil {
		t.Error("garbage parsed")
	}
}

// TestPodGroupOf: the window's counts and the use over the load.
func TestPodGroupOf(t *testing.T) {
	at := time.Unix(1795939200, 0)
	before := podSample{at: at, usageUsec: 1_000_000}
	before.stat.Periods, before.stat.ThrottledPeriods = 10, 1
	after := podSample{at: at.Add(20 * time.Second), usageUsec: 7_400_000, quotaUsec: 80000, periodUsec: 100000, group: "/kubepods/pod1"}
	after.stat.Periods, after.stat.ThrottledPeriods = 90, 31
	g := podGroupOf("pod/l/r1", "pod", "n", before, after, 8)
	if g.CPUStat.Periods != 80 || g.CPUStat.ThrottledPeriods != 30 || g.UsageCores != 0.8 || g.WindowSec != 20 || g.QuotaUsec != 80000 {
		t.Errorf("%+v", g)
	}
}
