package watch

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/throttlelab/throttlelab/cgroup"
)

func TestMetricsScrapedAndParsed(t *testing.T) {
	w, root, dir := containerSecond(t)
	writeFile(t, root, dir+"cpu.pressure", "some avg10=45.00 avg60=31.00 avg300=10.50 total=5600000\nfull avg10=41.00 avg60=28.50 avg300=9.10 total=5000000\n")
	w.Sample(time.Second)
	c := NewCollector(cgroup.WeightLinear)
	c.Update(w.Report())
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the endpoint does not speak the text format: %v", err)
	}
	// The container's series, by metric name.
	id := "/" + dir[len("sys/fs/cgroup/"):len(dir)-1]
	get := func(name string) *dto.Metric {
		f, ok := fams[name]
		if !ok {
			t.Errorf("no %s", name)
			return nil
		}
		for _, m := range f.Metric {
			l := map[string]string{}
			for _, lp := range m.Label {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["id"] == id {
				if l["container"] != "api" || l["pod"] != "api-0" || l["namespace"] != "web" || l["name"] != "web/api-0/api" {
					t.Errorf("%s labels %v", name, l)
				}
				return m
			}
		}
		t.Errorf("%s has no series for %s", name, id)
		return nil
	}
	counters := map[string]float64{
		"container_cpu_usage_seconds_total":            1,
		"container_cpu_user_seconds_total":             0.88,
		"container_cpu_system_seconds_total":           0.12,
		"container_cpu_cfs_periods_total":              410,
		"container_cpu_cfs_throttled_periods_total":    308,
		"container_cpu_cfs_throttled_seconds_total":    20.6,
		"container_cpu_cfs_burst_periods_total":        5,
		"container_cpu_cfs_burst_seconds_total":        0.045,
		"container_pressure_cpu_waiting_seconds_total": 5.6,
		"container_pressure_cpu_stalled_seconds_total": 5,
	}
	for name, want := range counters {
		if m := get(name); m != nil && (m.Counter == nil || m.Counter.GetValue() != want) {
			t.Errorf("%s = %v, want counter %g", name, m, want)
		}
	}
	gauges := map[string]float64{
		"container_spec_cpu_quota":                20000,
		"container_spec_cpu_period":               100000,
		"container_spec_cpu_shares":               238, // weight 10, read as cAdvisor reads weights
		"container_processes":                     1,
		"throttlelab_cpu_usage_cores":             0.2,
		"throttlelab_cpu_peak_period_cores":       0.2,
		"throttlelab_cpu_limit_cores":             0.2,
		"throttlelab_cpu_throttled_periods_ratio": 0.8,
	}
	for name, want := range gauges {
		if m := get(name); m != nil && (m.Gauge == nil || m.Gauge.GetValue() < want-1e-9 || m.Gauge.GetValue() > want+1e-9) {
			t.Errorf("%s = %v, want gauge %g", name, m, want)
		}
	}
	if m := get("container_cpu_usage_seconds_total"); m != nil && labelOf(m, "cpu") != "total" {
		t.Errorf("usage has cpu=%q, want total as cAdvisor", labelOf(m, "cpu"))
	}
	// The stall's split, one series per cause.
	causes := map[string]float64{}
	for _, m := range fams["throttlelab_cpu_stall_seconds_total"].GetMetric() {
		if labelOf(m, "id") == id {
			causes[labelOf(m, "cause")] = m.GetCounter().GetValue()
		}
	}
	if len(causes) != 2 || causes["quota"] < 0.6-1e-9 || causes["quota"] > 0.6+1e-9 || causes["contention"] != 0 {
		t.Errorf("throttlelab_cpu_stall_seconds_total by cause %v, want quota 0.6, contention 0", causes)
	}
	// cAdvisor exports CFS counters for limited groups only.
	for _, m := range fams["container_cpu_cfs_periods_total"].Metric {
		if labelOf(m, "id") == "/system.slice" {
			t.Error("an unlimited slice has CFS counters")
		}
	}
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
