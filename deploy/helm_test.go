package deploy

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/throttlelab/throttlelab/testenv"
)

const chart = "helm/throttlelab-agent"

// helmTemplate runs helm template RELEASE chart -n NS with the --set
// values, and returns its output and error output.
func helmTemplate(t *testing.T, release, ns string, set ...string) ([]byte, string, error) {
	t.Helper()
	args := []string{"template", release, chart, "-n", ns}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command(testenv.Helm(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.Bytes(), errOut.String(), err
}

type object struct {
	Kind     string
	Metadata struct {
		Name, Namespace string
		Labels          map[string]string
	}
}

func decodeObjects(t *testing.T, b []byte) []object {
	t.Helper()
	var out []object
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var o object
		if err := dec.Decode(&o); err != nil {
			if err.Error() == "EOF" {
				return out
			}
			t.Fatalf("decoding helm template's output: %v", err)
		}
		if o.Kind != "" {
			out = append(out, o)
		}
	}
}

// TestChartReleases renders releases of the chart, every option on, as
// Helm would install them side by side: one name in two namespaces, and
// two names in one. No two objects share a kind, namespace and name (the
// cluster-wide ClusterRole and binding included); every object is in its
// release's namespace and carries Helm's standard labels.
func TestChartReleases(t *testing.T) {
	seen := map[string]string{}
	all := "namespace.create=true,podMonitor.enabled=true,prometheusRule.enabled=true,dashboard.enabled=true"
	for _, r := range []struct{ release, ns string }{{"throttlelab-agent", "team-a"}, {"throttlelab-agent", "team-b"}, {"other", "team-a"}} {
		out, stderr, err := helmTemplate(t, r.release, r.ns, all)
		if err != nil {
			t.Fatalf("helm template %s -n %s: %v\n%s", r.release, r.ns, err, stderr)
		}
		objs := decodeObjects(t, out)
		if len(objs) < 9 {
			t.Fatalf("%s -n %s: %d objects, want every option's", r.release, r.ns, len(objs))
		}
		for _, o := range objs {
			at := fmt.Sprintf("%s -n %s: %s %s", r.release, r.ns, o.Kind, o.Metadata.Name)
			key := o.Kind + " " + o.Metadata.Namespace + "/" + o.Metadata.Name
			if o.Kind == "Namespace" {
				if o.Metadata.Name != r.ns {
					t.Errorf("%s: the chart makes another namespace than the release's", at)
				}
				continue // the second release in team-a would use the first's namespace (namespace.create=false)
			}
			if prev, dup := seen[key]; dup {
				t.Errorf("%s collides with %s's", at, prev)
			}
			seen[key] = r.release + " -n " + r.ns
			switch o.Kind {
			case "ClusterRole", "ClusterRoleBinding":
				if o.Metadata.Namespace != "" {
					t.Errorf("%s: a cluster-wide object with a namespace", at)
				}
			default:
				if o.Metadata.Namespace != r.ns {
					t.Errorf("%s: in namespace %q, not the release's", at, o.Metadata.Namespace)
				}
			}
			l := o.Metadata.Labels
			for k, want := range map[string]string{"app.kubernetes.io/name": "throttlelab", "app.kubernetes.io/instance": r.release,
				"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/version": "dev", "helm.sh/chart": "throttlelab-agent-0.0.0-dev"} {
				if l[k] != want {
					t.Errorf("%s: label %s is %q, want %q", at, k, l[k], want)
				}
			}
		}
	}
}

// TestChartRefuses: the values schema refuses bad values, naming the
// value, and the two monitors together fail with one line.
func TestChartRefuses(t *testing.T) {
	for _, c := range []struct{ set, want string }{
		{"port=0", "/port"},
		{"port=abc", "/port"},
		{"state.volume=pvc", "/state/volume"},
		{"image.pullPolicy=Sometimes", "/image/pullPolicy"},
		{"owners=maybe", "/owners"},
		{"podMonitor.interval=soon", "/podMonitor/interval"},
		{"namespace.name=agents", "namespace"},
		{"replicas=3", "replicas"},
		{"args={window=24h}", "/args/0"},
	} {
		_, stderr, err := helmTemplate(t, "r", "ns", c.set)
		if err == nil || !strings.Contains(stderr, "values don't meet the specifications of the schema") || !strings.Contains(stderr, c.want) {
			t.Errorf("--set %s: %v %q, want the schema refusing %s", c.set, err, stderr, c.want)
		}
	}
	_, stderr, err := helmTemplate(t, "r", "ns", "podMonitor.enabled=true,serviceMonitor.enabled=true")
	first, _, _ := strings.Cut(stderr, "\n")
	if err == nil || !strings.Contains(first, "podMonitor.enabled and serviceMonitor.enabled: choose one") || strings.Count(stderr, "podMonitor") != 1 {
		t.Errorf("both monitors: %v %q, want one line refusing them", err, stderr)
	}
	for _, set := range []string{"podMonitor.enabled=true", "serviceMonitor.enabled=true", "state.volume=emptyDir,port=9200"} {
		if _, stderr, err := helmTemplate(t, "r", "ns", set); err != nil {
			t.Errorf("--set %s: %v\n%s", set, err, stderr)
		}
	}

}
