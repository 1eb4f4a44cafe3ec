package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/throttlelab/throttlelab/testenv"
)

const chartDir = "../../deploy/helm/throttlelab-agent"

// TestHelmChart holds the Helm chart to the renderer: helm lint --strict
// passes with the defaults and with every option on, and helm template
// gives, object for object, what throttlelab k8s render agent gives with
// the same choices (the defaults; no owner lookup; a PodMonitor; agent
// flags; the namespace made; the state in an emptyDir; another release in
// another namespace), the image being the chart's appVersion in the
// release repository. The two differ in the labels that name the tool
// that made the objects: the chart's say managed-by Helm and
// helm.sh/chart, the renderer's managed-by throttlelab. The PrometheusRule holds deploy/prometheus/rules.yaml's
// groups and the dashboard ConfigMap deploy/grafana/throttlelab.json, and
// the chart's copies of both are the files themselves.
func TestHelmChart(t *testing.T) {
	helm := testenv.Helm(t)
	for _, set := range []string{"", "podMonitor.enabled=true,prometheusRule.enabled=true,dashboard.enabled=true,owners=false,nodeSelector.disk=ssd,namespace.create=true,state.volume=emptyDir"} {
		args := []string{"lint", "--strict", chartDir}
		if set != "" {
			args = append(args, "--set", set)
		}
		out, err := exec.Command(helm, args...).CombinedOutput()
		if err != nil || regexp.MustCompile(`\[(WARNING|ERROR)\]`).Match(out) {
			t.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	chart, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^appVersion: *"?([^"\s]+)"?$`).FindSubmatch(chart)
	if m == nil {
		t.Fatal("Chart.yaml has no appVersion")
	}
	image := "ghcr.io/throttlelab/throttlelab:" + string(m[1])
	for _, c := range []struct {
		name string
		set  []string
		flag []string
	}{
		{"defaults", nil, nil},
		{"no owners", []string{"owners=false"}, []string{"--owners=false"}},
		{"pod monitor", []string{"podMonitor.enabled=true"}, []string{"--pod-monitor"}},
		{"agent flags", []string{"args={--window=24h,--max-throttled=1%}"}, []string{"--agent-arg=--window=24h", "--agent-arg=--max-throttled=1%"}},
		{"namespace made", []string{"namespace.create=true"}, []string{"--create-namespace"}},
		{"state in an emptyDir", []string{"state.volume=emptyDir"}, []string{"--state", "emptyDir"}},
		{"host proc", []string{"runtime.hostProc=true"}, []string{"--host-proc"}},
		{"host proc, state in an emptyDir", []string{"runtime.hostProc=true", "state.volume=emptyDir"}, []string{"--host-proc", "--state", "emptyDir"}},
		{"another release", []string{"-n=team-a", "--release=r1"}, []string{"--namespace", "team-a", "--release", "r1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			release, ns := "throttlelab-agent", "throttlelab-agent"
			var sets []string
			for _, s := range c.set {
				switch {
				case strings.HasPrefix(s, "-n="):
					ns = s[3:]
				case strings.HasPrefix(s, "--release="):
					release = s[10:]
				default:
					sets = append(sets, s)
				}
			}
			args := []string{"template", release, chartDir, "-n", ns}
			for _, s := range sets {
				args = append(args, "--set", s)
			}
			fromHelm := objects(t, command(t, helm, args...))
			for k, o := range fromHelm {
				l := o["metadata"].(map[string]any)["labels"].(map[string]any)
				if l["app.kubernetes.io/managed-by"] != "Helm" || !strings.HasPrefix(fmt.Sprint(l["helm.sh/chart"]), "throttlelab-agent-") {
					t.Errorf("helm template's %s is labelled %v: want managed-by Helm and helm.sh/chart", k, l)
				}
				delete(l, "helm.sh/chart")
				l["app.kubernetes.io/managed-by"] = "throttlelab"
			}
			fromRender := objects(t, command(t, binary, append([]string{"k8s", "render", "agent", "--image", image}, c.flag...)...))
			if len(fromHelm) != len(fromRender) {
				t.Errorf("helm template gives %s, k8s render agent %s", keys(fromHelm), keys(fromRender))
			}
			for k, want := range fromRender {
				got, ok := fromHelm[k]
				if !ok {
					t.Errorf("helm template gives no %s", k)
					continue
				}
				if !reflect.DeepEqual(got, want) {
					g, _ := json.MarshalIndent(got, "", "  ")
					w, _ := json.MarshalIndent(want, "", "  ")
					t.Errorf("%s differs:\nhelm template:\n%s\nk8s render agent:\n%s", k, g, w)
				}
			}
		})
	}

	// The rules and the dashboard: the chart's copies are the files, and
	// the objects hold them.
	for copyOf, file := range map[string]string{"files/rules.yaml": "../../deploy/prometheus/rules.yaml", "files/throttlelab.json": "../../deploy/grafana/throttlelab.json"} {
		a, err1 := os.ReadFile(filepath.Join(chartDir, copyOf))
		b, err2 := os.ReadFile(file)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("the chart's %s is not %s: cp %s deploy/helm/throttlelab-agent/%s (%v %v)", copyOf, file, strings.TrimPrefix(file, "../../"), copyOf, err1, err2)
		}
	}
	all := objects(t, command(t, helm, "template", "throttlelab-agent", chartDir, "-n", "throttlelab-agent", "--set", "prometheusRule.enabled=true,dashboard.enabled=true,serviceMonitor.enabled=true"))
	rule := all["PrometheusRule throttlelab-agent/throttlelab-agent"]
	var rules map[string]any
	if b, err := os.ReadFile("../../deploy/prometheus/rules.yaml"); err != nil || yaml.Unmarshal(b, &rules) != nil {
		t.Fatalf("rules.yaml: %v", err)
	}
	if rule == nil || !reflect.DeepEqual(rule["spec"], rules) {
		t.Errorf("the PrometheusRule's spec is not rules.yaml: %v", rule)
	}
	cm := all["ConfigMap throttlelab-agent/throttlelab-agent-dashboard"]
	dash, _ := os.ReadFile("../../deploy/grafana/throttlelab.json")
	if cm == nil || cm["data"].(map[string]any)["throttlelab.json"] != strings.TrimRight(string(dash), "\n") ||
		cm["metadata"].(map[string]any)["labels"].(map[string]any)["grafana_dashboard"] != "1" {
		t.Errorf("the dashboard ConfigMap does not hold the dashboard labelled grafana_dashboard: \"1\"")
	}
	if sm := all["ServiceMonitor throttlelab-agent/throttlelab-agent"]; sm == nil {
		t.Errorf("serviceMonitor.enabled gives no ServiceMonitor: %s", keys(all))
	}

	// The chart's output passes check --lint.
	lint := exec.Command(binary, "check", "--lint", "-")
	lint.Stdin = bytes.NewReader(command(t, helm, "template", "throttlelab-agent", chartDir, "-n", "throttlelab-agent", "--set", "prometheusRule.enabled=true,dashboard.enabled=true"))
	if out, err := lint.CombinedOutput(); err != nil || !strings.Contains(string(out), "lint: 1 containers, 0 experiment specs, 0 findings") {
		t.Errorf("check --lint on the chart's output: %v\n%s", err, out)
	}
}

func command(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// objects decodes a multi-document YAML stream into its objects, keyed
// "KIND NAMESPACE/NAME".
func objects(t *testing.T, b []byte) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var o map[string]any
		err := dec.Decode(&o)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("decoding: %v\n%s", err, b)
		}
		if o == nil {
			continue
		}
		md, _ := o["metadata"].(map[string]any)
		k := fmt.Sprintf("%v %v/%v", o["kind"], md["namespace"], md["name"])
		if md["namespace"] == nil {
			k = fmt.Sprintf("%v %v", o["kind"], md["name"])
		}
		if _, dup := out[k]; dup {
			t.Fatalf("two objects %s", k)
		}
		out[k] = o
	}
	return out
}

func keys(m map[string]map[string]any) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return strings.Join(ks, ", ")
}
