package k8s

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"k8s.io/client-go/kubernetes"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/record"
)

// podSample is one reading of a pod cgroup from cAdvisor.
type podSample struct {
	at         time.Time
	group      string
	stat       cgroup.CPUStat
	usageUsec  uint64
	quotaUsec  int64
	periodUsec uint64
}

// cAdvisor's names for what a pod group reports.
const (
	metricPeriods   = "container_cpu_cfs_periods_total"
	metricThrottled = "container_cpu_cfs_throttled_periods_total"
	metricThrSec    = "container_cpu_cfs_throttled_seconds_total"
	metricUsage     = "container_cpu_usage_seconds_total"
	metricQuota     = "container_spec_cpu_quota"
	metricPeriod    = "container_spec_cpu_period"
)

// parsePodSample finds the pod-level series of a pod (namespace ns, name
// pod, UID uid) in the kubelet's /metrics/cadvisor text: the one with an
// empty container label whose cgroup (id) is the pod's own directory,
// kubepods/.../podUID (cgroupfs) or kubepods-...-podUID_WITH_UNDERSCORES.slice
// (systemd), not its sandbox's.
func parsePodSample(b []byte, ns, pod, uid string) (podSample, error) {
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		return podSample{}, fmt.Errorf("the kubelet's cAdvisor metrics: %w", err)
	}
	isPod := func(m *dto.Metric) (string, bool) {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		id := l["id"]
		last := id[strings.LastIndex(id, "/")+1:]
		own := strings.HasSuffix(last, "pod"+uid) || strings.HasSuffix(last, "pod"+strings.ReplaceAll(uid, "-", "_")+".slice")
		return id, l["namespace"] == ns && l["pod"] == pod && l["container"] == "" && own
	}
	var s podSample
	found := map[string]bool{}
	for _, name := range []string{metricPeriods, metricThrottled, metricThrSec, metricUsage, metricQuota, metricPeriod} {
		f := fams[name]
		if f == nil {
			continue
		}
		for _, m := range f.GetMetric() {
			id, ok := isPod(m)
			if !ok {
				continue
			}
			v := m.GetCounter().GetValue()
			if f.GetType() == dto.MetricType_GAUGE {
				v = m.GetGauge().GetValue()
			}
			found[name], s.group = true, id
			if ts := m.GetTimestampMs(); ts > 0 && name == metricPeriods {
				s.at = time.UnixMilli(ts)
			}
			switch name {
			case metricPeriods:
				s.stat.Periods = uint64(v)
			case metricThrottled:
				s.stat.ThrottledPeriods = uint64(v)
			case metricThrSec:
				s.stat.ThrottledUsec = uint64(math.Round(v * 1e6))
			case metricUsage:
				s.usageUsec = uint64(math.Round(v * 1e6))
			case metricQuota: // microseconds, as in the cgroup's file
				s.quotaUsec = int64(v)
			case metricPeriod:
				s.periodUsec = uint64(v)
			}
		}
	}
	if !found[metricPeriods] || !found[metricUsage] {
		return podSample{}, fmt.Errorf("the kubelet's cAdvisor metrics have no CFS series of pod %s/%s's own cgroup (pod%s): is its pod-level limit set?", ns, pod, uid)
	}
	if s.at.IsZero() {
		return podSample{}, fmt.Errorf("the kubelet's cAdvisor metrics of pod %s/%s carry no timestamp", ns, pod)
	}
	return s, nil
}

// readPodGroup reads the pod's group (a server reads only its own
// container's group, which is inside it) from the kubelet's cAdvisor metrics
// through the API server's node proxy, waiting (up to timeout, polling
// every poll) for a reading taken after since: cAdvisor refreshes its
// figures every 10-15 s.
func readPodGroup(ctx context.Context, cs kubernetes.Interface, node, ns, pod, uid string, since time.Time, timeout, poll time.Duration) (podSample, error) {
	deadline := time.Now().Add(timeout)
	for {
		b, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "metrics", "cadvisor").DoRaw(ctx)
		if err != nil {
			// The API server's own words are in the body: "address not
			// allowed" for a node on loopback (it proxies to global
			// unicast addresses only), forbidden without nodes/proxy.
			body := strings.TrimSpace(string(b))
			if len(body) > 200 {
				body = body[:200]
			}
			return podSample{}, fmt.Errorf("reading the kubelet's cAdvisor metrics through the node proxy of %s: %w: %s (the pod group's figures need get on nodes/proxy and a node address the API server proxies to)", node, err, body)
		}
		s, err := parsePodSample(b, ns, pod, uid)
		if err == nil && !s.at.Before(since) {
			return s, nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("cAdvisor's latest reading of pod %s/%s is from %s, before %s", ns, pod, s.at.UTC().Format(time.RFC3339), since.UTC().Format(time.RFC3339))
			}
			return podSample{}, fmt.Errorf("after %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return podSample{}, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// podGroupOf is the pod group's record over a window from two readings;
// loadSec is the load's duration.
func podGroupOf(run, pod, node string, before, after podSample, loadSec float64) record.PodGroup {
	g := record.PodGroup{Run: run, Pod: pod, Node: node, Group: after.group, QuotaUsec: after.quotaUsec, PeriodUsec: after.periodUsec,
		CPUStat: after.stat.Sub(before.stat), WindowSec: after.at.Sub(before.at).Seconds()}
	if loadSec > 0 {
		g.UsageCores = float64(after.usageUsec-before.usageUsec) / 1e6 / loadSec
	}
	return g
}
