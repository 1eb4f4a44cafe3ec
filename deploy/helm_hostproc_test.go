package deploy

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type daemonSet struct {
	Kind string
	Spec struct {
		Template struct {
			Spec struct {
				HostPID        bool `yaml:"hostPID"`
				InitContainers []struct {
					Args []string
				} `yaml:"initContainers"`
				Containers []struct {
					Name            string
					SecurityContext struct {
						RunAsUser    *int64 `yaml:"runAsUser"`
						RunAsNonRoot *bool  `yaml:"runAsNonRoot"`
						Capabilities struct {
							Drop, Add []string
						}
					} `yaml:"securityContext"`
				}
				Volumes []struct {
					Name     string
					HostPath *struct{ Path string } `yaml:"hostPath"`
				}
			}
		}
	}
}

func agentDaemonSet(t *testing.T, set ...string) daemonSet {
	t.Helper()
	out, stderr, err := helmTemplate(t, "r", "ns", set...)
	if err != nil {
		t.Fatalf("helm template --set %v: %v\n%s", set, err, stderr)
	}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var d daemonSet
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("no DaemonSet in helm template's output: %v", err)
		}
		if d.Kind == "DaemonSet" {
			return d
		}
	}
}

// TestChartRuntimeHostProc: runtime.hostProc is off by default (the
// agent's own PID namespace, non-root, no capability); on, the agent runs
// in the host's PID namespace as root with CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH
// alone (what reading other users' /proc/PID/exe and environ takes), its state handed
// to root, and still no host /proc mount; a value that is not a boolean is
// refused by the schema.
func TestChartRuntimeHostProc(t *testing.T) {
	for _, on := range []bool{false, true} {
		var set []string
		if on {
			set = []string{"runtime.hostProc=true"}
		}
		s := agentDaemonSet(t, set...).Spec.Template.Spec
		if s.HostPID != on {
			t.Errorf("hostProc %v: hostPID %v", on, s.HostPID)
		}
		if len(s.Containers) != 1 {
			t.Fatalf("hostProc %v: %d containers, want the agent", on, len(s.Containers))
		}
		sc := s.Containers[0].SecurityContext
		root := sc.RunAsUser != nil && *sc.RunAsUser == 0
		if root != on || (on && (sc.RunAsNonRoot == nil || *sc.RunAsNonRoot)) {
			t.Errorf("hostProc %v: runAsUser %v runAsNonRoot %v", on, sc.RunAsUser, sc.RunAsNonRoot)
		}
		want := []string(nil)
		if on {
			want = []string{"SYS_PTRACE", "DAC_READ_SEARCH"}
		}
		if !slices.Equal(sc.Capabilities.Add, want) || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
			t.Errorf("hostProc %v: capabilities add %v drop %v, want add %v drop [ALL]", on, sc.Capabilities.Add, sc.Capabilities.Drop, want)
		}
		owner := "65532:65532"
		if on {
			owner = "0:0"
		}
		if len(s.InitContainers) != 1 || !slices.Contains(s.InitContainers[0].Args, owner) {
			t.Errorf("hostProc %v: state-owner %+v, want the state handed to %s", on, s.InitContainers, owner)
		}
		for _, v := range s.Volumes {
			if v.HostPath != nil && strings.HasPrefix(v.HostPath.Path, "/proc") {
				t.Errorf("hostProc %v: a hostPath of %s: the host's PID namespace is enough", on, v.HostPath.Path)
			}
		}
	}
	_, stderr, err := helmTemplate(t, "r", "ns", "runtime.hostProc=maybe")
	if err == nil || !strings.Contains(stderr, "/runtime/hostProc") {
		t.Errorf("runtime.hostProc=maybe: %v %q, want the schema refusing /runtime/hostProc", err, stderr)
	}
}
