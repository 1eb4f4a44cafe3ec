package agreement

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/agent"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// usageLine is cpu.stat's usage counter.
var usageLine = regexp.MustCompile(`(?m)^usage_usec \d+\n`)

// containerScope is a container's group under kubepods (systemd driver).
var containerScope = regexp.MustCompile(`/kubepods.*/cri-containerd-[0-9a-f]+\.scope/cpu\.stat$`)

// agentOverHTTP runs a real agent (agent.New) on a fake cgroup v2 node
// whose containers' usage counters move as usage says, samples it at at
// (every 10 ms) and reports every second as its loop does, and returns
// what its /advice endpoint serves, read over the agent's own handler.
func agentOverHTTP(t *testing.T, at, usage []time.Duration, target advise.Target, cfg agent.SummaryConfig) agent.AdviceDoc {
	t.Helper()
	root := watchtest.FakeRoot(t, "v2-kubepods-systemd")
	// The containers' cpu.stat moves (the agent summarises containers).
	type counter struct {
		f    *os.File // kept open: opening it anew at every step is most of the test's time
		rest string
	}
	var files []counter
	err := filepath.WalkDir(filepath.Join(root, "sys/fs/cgroup"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cpu.stat" || !containerScope.MatchString(p) {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil || !usageLine.Match(b) {
			return err
		}
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		t.Cleanup(func() { f.Close() })
		files = append(files, counter{f, usageLine.ReplaceAllString(string(b), "")})
		return nil
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("no cpu.stat in the fake tree: %v", err)
	}
	a, err := agent.New(agent.Config{Root: root, Node: "node-1", MaxMilli: 2000, Summary: cfg,
		Targets: []agent.NamedTarget{{Name: agent.TargetName(target), Target: target}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	for i := range at {
		for _, c := range files {
			b := fmt.Appendf(nil, "usage_usec %d\n%s", usage[i]/time.Microsecond, c.rest)
			if _, err := c.f.WriteAt(b, 0); err != nil {
				t.Fatal(err)
			}
			if err := c.f.Truncate(int64(len(b))); err != nil {
				t.Fatal(err)
			}
		}
		// The agent's clock starts at its first sample; the demand's at 0.
		a.Sample(at[i] + 10*time.Millisecond)
		if (i+1)%100 == 0 {
			if err := a.Report(at[i] + 10*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			a.Drain()
		}
	}
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/advice", nil))
	var doc agent.AdviceDoc
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &doc) != nil {
		t.Fatalf("/advice: %d %s", rec.Code, rec.Body)
	}
	return doc
}
