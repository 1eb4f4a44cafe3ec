//lint:file-ignore SA1019 the v1 dashboard JSON is what Grafana 9 to 12 import; dashboardv2 needs Grafana 12's v2 API

package deploy

import (
	"encoding/json"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// sel is the selector every panel narrows by: the dashboard's namespace and
// pod variables.
const sel = `namespace=~"$namespace", pod=~"$pod"`

// agentInfo gives an agent's own series (its process's, which carry no
// label of their own) the node label.
const agentInfo = "group by (job, instance, node) (throttlelab_agent_info)"

// by is the grouping of every per-container series.
const by = "namespace, pod, container"

func ds() common.DataSourceRef {
	t, uid := "prometheus", "${datasource}"
	return common.DataSourceRef{Type: &t, Uid: &uid}
}

func q(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Expr(expr).LegendFormat(legend).Datasource(ds())
}

func series(title, desc, unit string, targets ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().Title(title).Description(desc).Unit(unit).Datasource(ds()).Min(0).Height(8).Span(12)
	for _, t := range targets {
		p = p.WithTarget(t)
	}
	return p
}

func variable(name, label, query string) cog.Builder[dashboard.VariableModel] {
	return dashboard.NewQueryVariableBuilder(name).Label(label).Query(dashboard.StringOrMap{String: &query}).Datasource(ds()).
		Multi(true).IncludeAll(true).AllValue(".*").Refresh(dashboard.VariableRefreshOnTimeRangeChanged)
}

// Dashboard builds the throttlelab dashboard: for the containers the
// agents summarise, throttling now (with the peak within a period that
// cAdvisor's 10-15 s scrapes average away), what the quota model predicts at
// the current, advised, krr and VPA limits, and the limits themselves.
func Dashboard() (dashboard.Dashboard, error) {
	dsVar := dashboard.NewDatasourceVariableBuilder("datasource").Label("Prometheus").Type("prometheus")
	b := dashboard.NewDashboardBuilder("throttlelab: CPU limits").
		Uid("throttlelab-fleet").
		Description("What CPU limits do to every container the throttlelab agents see, and what limit would do better (docs/fleet.md).").
		Tags([]string{"throttlelab", "cpu", "kubernetes"}).
		Refresh("1m").Time("now-6h", "now").Timezone(common.TimeZoneBrowser).
		WithVariable(dsVar).
		WithVariable(variable("namespace", "Namespace", "label_values(throttlelab_container_info, namespace)")).
		WithVariable(variable("pod", "Pod", `label_values(throttlelab_container_info{namespace=~"$namespace"}, pod)`)).
		WithRow(dashboard.NewRowBuilder("Now: what the limit does")).
		WithPanel(series("Throttled share of periods",
			"nr_throttled / nr_periods over the rate window: how often the quota ran dry. Many briefly throttled periods can hurt less than a few long ones: read it with the next panel.",
			"percentunit",
			q(`sum by (`+by+`) (rate(container_cpu_cfs_throttled_periods_total{`+sel+`}[$__rate_interval])) / sum by (`+by+`) (rate(container_cpu_cfs_periods_total{`+sel+`}[$__rate_interval]))`, "{{namespace}}/{{pod}}/{{container}}"))).
		WithPanel(series("Throttled time per CPU second used",
			"Time the container's threads were held back by the quota per second of CPU they used: the mean extra wait of its work. Above 0.1 for 15 minutes, with the peak at the limit, the ThrottlelabCPUThrottlingHurts alert fires.",
			"percentunit",
			q(`sum by (`+by+`) (rate(container_cpu_cfs_throttled_seconds_total{`+sel+`}[$__rate_interval])) / sum by (`+by+`) (rate(container_cpu_usage_seconds_total{`+sel+`}[$__rate_interval]))`, "{{namespace}}/{{pod}}/{{container}}"))).
		WithPanel(series("Peak use within one period vs the limit",
			"The highest use within one CFS period (sampled every 10 ms) beside the mean over the agent's refresh (10 s) and the limit: a peak at the limit with a low mean is the bursty demand a 15 s scrape cannot see.",
			"short",
			q(`max by (`+by+`) (throttlelab_cpu_peak_period_cores{`+sel+`})`, "peak {{pod}}/{{container}}"),
			q(`max by (`+by+`) (throttlelab_cpu_usage_cores{`+sel+`})`, "mean {{pod}}/{{container}}"),
			q(`max by (`+by+`) (throttlelab_container_cpu_limit_cores{`+sel+`})`, "limit {{pod}}/{{container}}"))).
		WithPanel(series("CPU use", "CPU use in cores over the rate window, as cAdvisor's counter gives it.", "short",
			q(`sum by (`+by+`) (rate(container_cpu_usage_seconds_total{`+sel+`}[$__rate_interval]))`, "{{namespace}}/{{pod}}/{{container}}"))).
		WithRow(dashboard.NewRowBuilder("Over the window: what the model predicts")).
		WithPanel(series("Predicted throttled share: current, advised, krr, VPA",
			"The quota model replayed on the agent's window of 10 ms demand: the share of periods throttled at the current limit, at the advised one, and at what krr's and the VPA's rules would set.",
			"percentunit",
			q(`max by (`+by+`, at) (throttlelab_predicted_throttled_ratio{`+sel+`})`, "{{pod}}/{{container}} at {{at}}"))).
		WithPanel(series("Prediction error at the current limit (self-audit)",
			"The model's throttled share at the container's own limit over the window, less the share the kernel counted: how far the advice's own replay is off for this container. Every interval of its advice is widened by the size of this error; far from 0 for long, distrust the advice (demand that answers to throttling, a closed loop, or a workload the model misreads).",
			"percentunit",
			q(`max by (`+by+`) (throttlelab_container_prediction_error_ratio{`+sel+`})`, "{{pod}}/{{container}}"))).
		WithPanel(series("Predicted p99 added delay: current, advised, krr, VPA",
			"The delay the limit adds to the slowest 1% of the work, by the same model. Above 50 ms at the current limit for 30 minutes, the ThrottlelabPredictedDelayHigh alert fires.",
			"s",
			q(`max by (`+by+`, at) (throttlelab_predicted_delay_p99_seconds{`+sel+`})`, "{{pod}}/{{container}} at {{at}}"))).
		WithPanel(series("Limit: current, advised, krr, VPA",
			"The current limit, the advised limit per target, krr's p95 (which krr sets as a request, with no limit) and the VPA's target (p90 of 1-minute use + 15%).",
			"short",
			q(`max by (`+by+`) (throttlelab_container_cpu_limit_cores{`+sel+`})`, "current {{pod}}/{{container}}"),
			q(`max by (`+by+`, target) (throttlelab_advised_cpu_limit_cores{`+sel+`})`, "advised ({{target}}) {{pod}}/{{container}}"),
			q(`max by (`+by+`) (throttlelab_krr_cpu_cores{`+sel+`})`, "krr {{pod}}/{{container}}"),
			q(`max by (`+by+`) (throttlelab_vpa_cpu_target_cores{`+sel+`})`, "VPA {{pod}}/{{container}}"))).
		WithPanel(series("Demand the advice rests on",
			"How much demand each container's summary holds (up to the agent's window, 24 h by default): advice from minutes of demand is a guess.",
			"s",
			q(`max by (`+by+`) (throttlelab_demand_window_seconds{`+sel+`})`, "{{namespace}}/{{pod}}/{{container}}"))).
		WithRow(dashboard.NewRowBuilder("Advice")).
		WithPanel(table.NewPanelBuilder().Title("Advised limit per container and target").
			Description("The smallest limit that meets each target over the window (throttlelab advise reads the whole advice from the agent).").
			Datasource(ds()).Unit("short").Height(8).Span(24).
			WithTarget(q(`max by (`+by+`, target) (throttlelab_advised_cpu_limit_cores{`+sel+`})`, "").Instant().Format(prometheus.PromQueryFormatTable))).
		WithRow(dashboard.NewRowBuilder("The agents")).
		WithPanel(series("Agent CPU per node",
			"The CPU each agent's process used, in cores (process_cpu_seconds_total, joined to throttlelab_agent_info for the node): about 2% of a core for 200 containers sampled every 10 ms on the machines docs/fleet.md measured.",
			"short",
			q(`rate(process_cpu_seconds_total[$__rate_interval]) * on (job, instance) group_left (node) `+agentInfo, "{{node}}"))).
		WithPanel(series("Agent memory per node",
			"Each agent's resident memory: the summaries grow with the containers and the window (docs/fleet.md: about 64 MiB for 200 containers over 24 h).",
			"bytes",
			q(`process_resident_memory_bytes * on (job, instance) group_left (node) `+agentInfo, "{{node}}"))).
		WithPanel(series("Samples missed",
			"The share of 10 ms sampling instants an agent skipped because it came late (not scheduled in time, or behind): the demand between two samples is then replayed as one step. Above 5% for 15 minutes, the ThrottlelabAgentMissesSamples alert fires.",
			"percentunit",
			q(`rate(throttlelab_agent_samples_missed_total[$__rate_interval]) / (rate(throttlelab_agent_samples_total[$__rate_interval]) + rate(throttlelab_agent_samples_missed_total[$__rate_interval])) * on (job, instance) group_left (node) `+agentInfo, "{{node}}"))).
		WithPanel(series("Containers per agent",
			"The containers each agent summarises, and whether it watches for new ones (1) or finds them only at its refresh (0: no inotify watch left; its log says which sysctl to raise).",
			"short",
			q(`throttlelab_agent_containers * on (job, instance) group_left (node) `+agentInfo, "{{node}}"),
			q(`throttlelab_agent_new_containers_watched * on (job, instance) group_left (node) `+agentInfo, "watched {{node}}")))
	return b.Build()
}

// DashboardJSON is the dashboard as Grafana imports it, indented.
func DashboardJSON() ([]byte, error) {
	d, err := Dashboard()
	if err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// Resolve gives a panel query as Grafana runs it with the dashboard's
// defaults (every namespace and pod) and $__rate_interval as rateInterval
// (a PromQL duration: four scrape intervals is Grafana's rule).
func Resolve(query, rateInterval string) string {
	return strings.NewReplacer("$__rate_interval", rateInterval, "$namespace", ".*", "$pod", ".*").Replace(query)
}

// Queries returns every panel query of a dashboard JSON, in order.
func Queries(dashboardJSON []byte) ([]string, error) {
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(dashboardJSON, &d); err != nil {
		return nil, err
	}
	var out []string
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			if strings.TrimSpace(t.Expr) != "" {
				out = append(out, t.Expr)
			}
		}
	}
	return out, nil
}
