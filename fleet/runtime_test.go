package fleet

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/schemas/schematest"
)

// TestRuntimeColumnFromAgent reads an agent's /advice whose containers
// carry runtimes (one whose setting should change with the advised limit,
// one that needs none, one without) into the fleet table, CSV and JSON.
func TestRuntimeColumnFromAgent(t *testing.T) {
	const doc = `{"apiVersion":"throttlelab.dev/v1alpha1","kind":"AgentAdvice","node":"node-a","containers":[
 {"namespace":"shop","pod":"api-1","container":"app","owner_kind":"","owner_name":"","cgroup":"/a","limit_millicores":2000,"request_millicores":500,"burst_millicores":0,"krr_millicores":0,"vpa_millicores":0,"window_seconds":60,
  "runtime":{"runtime":"go","version":"go1.25.3","setting":"GOMAXPROCS","setting_set":true,"parallelism_found":8,"parallelism_at_advised_limit":8,"parallelism_recommended":1,"recommended_setting":"GOMAXPROCS=1"}},
 {"namespace":"shop","pod":"api-1","container":"jvm","owner_kind":"","owner_name":"","cgroup":"/b","limit_millicores":1000,"request_millicores":500,"burst_millicores":0,"krr_millicores":0,"vpa_millicores":0,"window_seconds":60,
  "runtime":{"runtime":"jvm","setting":"-XX:ActiveProcessorCount","setting_set":false,"parallelism_found":1,"parallelism_at_advised_limit":1,"parallelism_recommended":1,"recommended_setting":"-XX:ActiveProcessorCount=1"}},
 {"namespace":"shop","pod":"api-1","container":"pause","owner_kind":"","owner_name":"","cgroup":"/c","limit_millicores":0,"request_millicores":0,"burst_millicores":0,"krr_millicores":0,"vpa_millicores":0,"window_seconds":60,
  "runtime_why":"runtime not read, advised without it: pid 7: runtime unknown"}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(doc)) }))
	defer srv.Close()
	cs, err := FromAgent(context.Background(), srv.Client(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ms := Group(cs)
	var tab, csv, js bytes.Buffer
	if err := WriteTable(&tab, ms); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"RUNTIME", "go 8->GOMAXPROCS=1", "jvm 1 "} {
		if !strings.Contains(tab.String(), want) {
			t.Errorf("the table has no %q:\n%s", want, tab.String())
		}
	}
	if strings.Contains(tab.String(), "ActiveProcessorCount") {
		t.Errorf("the table advises a setting the runtime already uses under the advised limit:\n%s", tab.String())
	}
	if err := WriteCSV(&csv, ms); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(csv.String(), ",go,8,1,GOMAXPROCS=1,") {
		t.Errorf("the CSV has no go row with 8, 1, GOMAXPROCS=1:\n%s", csv.String())
	}
	if err := WriteJSON(&js, ms); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"recommended_setting": "GOMAXPROCS=1"`) {
		t.Errorf("the JSON has no runtime:\n%s", js.String())
	}
	schematest.Check(t, "workloads with runtimes", js.Bytes())
}

// TestRuntimeFromPrometheusSeries: the agent's runtime series, as a
// Prometheus query returns them (written here by hand, in the order and
// with the labels the agent exports), give the row's runtime; a container
// without them has none.
func TestRuntimeFromPrometheusSeries(t *testing.T) {
	L := func(kv ...string) map[string]string {
		m := map[string]string{"namespace": "shop", "pod": "api-1", "container": "app"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	ss := []Sample{
		{L("__name__", "throttlelab_container_info", "node", "node-a"), 1},
		{L("__name__", "throttlelab_runtime_parallelism", "value", "found"), 8},
		{L("__name__", "throttlelab_runtime_info", "runtime", "go", "version", "go1.25.3", "setting", "GOMAXPROCS", "set", "true"), 1},
		{L("__name__", "throttlelab_runtime_parallelism", "value", "advised_limit"), 8},
		{L("__name__", "throttlelab_runtime_parallelism", "value", "recommended"), 1},
		{L("__name__", "throttlelab_container_info", "container", "sidecar", "node", "node-a"), 1},
	}
	cs, err := fromSamples(ss, "http://prom", PromOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var app, side *Container
	for _, c := range cs {
		switch c.Container {
		case "app":
			app = c
		case "sidecar":
			side = c
		}
	}
	if app == nil || app.Runtime == nil {
		t.Fatalf("no runtime read for app: %+v", cs)
	}
	r := *app.Runtime
	if r.Runtime != "go" || r.Version != "go1.25.3" || !r.Set || r.Found != 8 || r.AtAdvised != 8 || r.Recommended != 1 || r.RecommendedSetting != "GOMAXPROCS=1" {
		t.Errorf("runtime %+v: want go1.25.3, GOMAXPROCS set, 8 found and under the advised limit, GOMAXPROCS=1 recommended", r)
	}
	if side == nil || side.Runtime != nil {
		t.Errorf("the sidecar without runtime series: %+v", side)
	}
	if cell := runtimeCell(app); cell != "go 8->GOMAXPROCS=1" {
		t.Errorf("cell %q", cell)
	}
}
