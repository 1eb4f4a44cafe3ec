package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/k8s/agentmanifest"
)

// TestAgentRenderedArgsParse parses the rendered DaemonSet's arguments with
// the agent command's own flags: the manifests start an agent that runs.
func TestAgentRenderedArgsParse(t *testing.T) {
	m, err := agentmanifest.Render(agentmanifest.Options{Image: "throttlelab:test", Owners: true, Args: []string{"--window", "24h", "--target", "delay=10ms"}})
	if err != nil {
		t.Fatal(err)
	}
	cmd := parseArgs(t, "agent", m.DaemonSet.Spec.Template.Spec.Containers[0].Args)
	if cmd.Name() != "agent" {
		t.Fatalf("the DaemonSet runs %q", cmd.Name())
	}
	for flag, want := range map[string]string{"root": "/host", "owners": "true", "state-dir": "/var/lib/throttlelab", "window": "24h0m0s"} {
		if got := cmd.Flags().Lookup(flag).Value.String(); got != want {
			t.Errorf("--%s %q, want %q", flag, got, want)
		}
	}
}

// TestAgentBadInput: one line naming the flag, exit status 2, before the
// agent starts.
func TestAgentBadInput(t *testing.T) {
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{"agent", "--objective", "p99=5ms"}, "--objective"},
		{[]string{"agent", "--max-throttled", "120%"}, "--max-throttled"},
		{[]string{"agent", "--window", "5h", "--block", "2h"}, "--window"},
		{[]string{"agent", "--sample", "1ms"}, "--sample"},
		{[]string{"agent", "--listen", "127.0.0.1:0", "--root", t.TempDir()}, "no cgroup filesystem is mounted under"},
		{[]string{"k8s", "render", "agent", "--image", "not an image"}, "image"},
		{[]string{"k8s", "render", "agent", "--agent-arg=--nope"}, "--agent-arg"},
		{[]string{"k8s", "render", "agent", "--quick"}, "--quick"},
	} {
		var out, errb bytes.Buffer
		code := Run(tt.args, &out, &errb)
		if code == 0 || out.Len() > 0 || strings.Count(strings.TrimSpace(errb.String()), "\n") > 0 || !strings.Contains(errb.String(), tt.msg) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q: want one line naming %q and a non-zero exit", tt.args, code, out.String(), errb.String(), tt.msg)
		}
	}
}

// TestAgentRenderCommand prints the manifests.
func TestAgentRenderCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Run([]string{"k8s", "render", "agent", "--image", "registry.example/throttlelab:v1", "--pod-monitor"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"kind: DaemonSet", "kind: PodMonitor", "kind: ClusterRole", "image: registry.example/throttlelab:v1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in the output", want)
		}
	}
}
