package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// podFiles writes one pod-level phase (the agent's evaluation at limit,
// predicting pred, and cpu.stat snapshots counting throttled of periods)
// and one per-container row, and returns the phases file.
func podFiles(t *testing.T, limit int64, pred float64, throttled, periods int64) string {
	t.Helper()
	dir := t.TempDir()
	w := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ev := w("eval.json", fmt.Sprintf(`{"limit_millicores": %d, "throttled_periods_ratio": %g}`, limit, pred))
	s0 := w("s0", "nr_periods 100\nnr_throttled 10\nthrottled_time 5\n")
	s1 := w("s1", fmt.Sprintf("nr_periods %d\nnr_throttled %d\nthrottled_time 9\n", 100+periods, 10+throttled))
	return w("phases.txt", fmt.Sprintf("pod-level p20 %d %s %s %s\nper-container server 260 - %s %s\n", limit, ev, s0, s1, s0, s1))
}

// The pod-level judge passes a share within max(0.07, 30%) of the
// prediction and fails one outside it, or one whose evaluation is of
// another limit than the cgroup had.
func TestPodPhases(t *testing.T) {
	if err := podPhases(podFiles(t, 410, 0.2, 230, 1000)); err != nil {
		t.Errorf("0.23 against 0.2: %v", err)
	}
	if err := podPhases(podFiles(t, 410, 0.2, 400, 1000)); err == nil || !strings.Contains(err.Error(), "outside max(0.07, 30%) of the agent's pod-level prediction at p20") {
		t.Errorf("0.40 against 0.2: %v", err)
	}
	p := podFiles(t, 410, 0.2, 230, 1000)
	b, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), "p20 410", "p20 420", 1)), 0o644)
	if err := podPhases(p); err == nil || !strings.Contains(err.Error(), "the pod's cgroup had 420m, the evaluation is of 410m") {
		t.Errorf("limits apart: %v", err)
	}
}
