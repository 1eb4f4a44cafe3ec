package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/agent"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// startAgent runs the agent binary on a fake tree and returns its base URL
// (from the line it prints when it serves), the process and what it printed
// before that line.
func startAgent(t *testing.T, root, state string) (string, *exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(binary, "agent", "--root", root, "--listen", "127.0.0.1:0", "--node", "node-1",
		"--chunk", "1s", "--block", "5s", "--window", "20s", "--interval", "100ms", "--state-dir", state)
	errOut, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r := bufio.NewReader(errOut)
	var before strings.Builder
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the agent said nothing about serving: %v (%s)", err, before.String())
		}
		if i := strings.Index(line, "http://"); i >= 0 {
			go func() { // keep reading, so that its writes never block
				for {
					if _, err := r.ReadString('\n'); err != nil {
						return
					}
				}
			}()
			return strings.TrimSuffix(strings.TrimSpace(line[i:]), "/metrics"), cmd, before.String()
		}
		before.WriteString(line)
	}
}

// TestAgentOnFakeTree drives the built binary as a DaemonSet would run it
// (on a fake v2 node): /advice names the node's container and advises it,
// SIGTERM ends it cleanly with a checkpoint, and the next run restores it.
func TestAgentOnFakeTree(t *testing.T) {
	root := watchtest.FakeRoot(t, "v2-kubepods-systemd")
	state := t.TempDir()
	url, cmd, _ := startAgent(t, root, state)
	var doc agent.AdviceDoc
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, body, err := httpGet(url + "/advice")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET /advice: %v %v", resp, err)
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("/advice is no JSON: %v", err)
		}
		if len(doc.Containers) == 1 && doc.Containers[0].Advice != nil {
			break
		}
	}
	if doc.Node != "node-1" || len(doc.Containers) != 1 {
		t.Fatalf("/advice: %+v", doc)
	}
	c := doc.Containers[0]
	if c.Namespace != "web" || c.Pod != "api-0" || c.Container != "api" || c.LimitMilli != 200 || c.Advice == nil || c.WindowSeconds <= 0 {
		t.Fatalf("the fake node's container: %+v (why %q)", c.Names, c.Why)
	}
	resp, body, err := httpGet(url + "/evaluate?namespace=web&pod=api-0&container=api&limit=300m")
	if err != nil || resp.StatusCode != 200 || !strings.Contains(string(body), `"limit_millicores": 300`) {
		t.Fatalf("/evaluate: %v %v %s", resp, err, body)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the agent ended on SIGTERM with %v", err)
	}
	if _, err := os.Stat(filepath.Join(state, "summaries.gob")); err != nil {
		t.Fatalf("no checkpoint on exit: %v", err)
	}
	if _, _, said := startAgent(t, root, state); !strings.Contains(said, "restored 1 container summaries") {
		t.Fatalf("the second run said %q: want its container's summary restored", said)
	}
}
