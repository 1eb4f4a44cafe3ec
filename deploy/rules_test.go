package deploy

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/testenv"
)

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		testenv.Unavailable(t, "promtool is not installed (apt-get install prometheus)")
	}
	return p
}

// TestRules checks the alerting rules with promtool and runs their unit
// tests (prometheus/rules_test.yaml): each alert fires where the harm is and
// stays quiet on CPUThrottlingHigh's case (many periods throttled briefly).
func TestRules(t *testing.T) {
	p := promtool(t)
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "rules_test.yaml"}} {
		cmd := exec.Command(p, args...)
		cmd.Dir = "prometheus"
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
