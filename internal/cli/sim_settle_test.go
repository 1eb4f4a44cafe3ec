package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/settle"
)

// TestSimUntilSettled simulates a preset whose check does not settle at
// its first look (F13's CPU burst, scaled to 2 cores: 5 repeats over 3
// looks on 2026-11-29; F7's quick bursts, whose phase is now fixed, settle
// at their first) until settled, as a
// user would through the root command, and reads what the cell says: the
// repeats it took, why it stopped and the rule's rate, in verdict.json, on
// the first line of stdout, and in spec.yaml and the run directories.
func TestSimUntilSettled(t *testing.T) {
	for _, c := range []struct {
		preset  string
		reasons []settle.Reason
		more    bool // took more repeats than the first look's
	}{
		{"f13-cpu-burst", []settle.Reason{settle.Stalled, settle.LastLook, settle.Budget, settle.Settled}, true},
		{"f03-pool-size", []settle.Reason{settle.Settled}, false},
	} {
		dir := filepath.Join(t.TempDir(), "out")
		var out, errb bytes.Buffer
		args := []string{"sim", c.preset, "--quick", "--cores", "2", "--until-settled", "--budget", "30s", "--out", dir}
		if code := runRoot(newRootCmd(), args, &out, &errb); code != ExitOK {
			t.Fatalf("throttlelab %s: exit %d; stderr:\n%s", strings.Join(args, " "), code, errb.String())
		}
		v := record.ReadVerdict(dir)
		if v == nil {
			t.Fatalf("%s: no verdict.json in %s", c.preset, dir)
		}
		s := v.Settle
		if s == nil {
			t.Fatalf("%s: verdict.json says nothing of the settling", c.preset)
		}
		reasonOK := false
		for _, r := range c.reasons {
			reasonOK = reasonOK || s.Reason == string(r)
		}
		if !reasonOK || s.Words != settle.Words(settle.Reason(s.Reason), s.Repeats) || s.Level != settle.Long.Level() || s.Rate != settle.Long.Rate() {
			t.Errorf("%s: settle %+v: want a reason among %v, its words, and the simulation's rule's level and rate", c.preset, s, c.reasons)
		}
		if (s.Reason == string(settle.Settled)) != (v.Outcome != "inconclusive") {
			t.Errorf("%s: stopped %q with outcome %q", c.preset, s.Reason, v.Outcome)
		}
		if c.more && (s.Repeats <= 3 || s.Looks < 2) {
			t.Errorf("%s: %d repeats over %d looks, want more than the first look's 3", c.preset, s.Repeats, s.Looks)
		}
		if v.Repeats != s.Repeats {
			t.Errorf("%s: the verdict's figures come from %d repeats, the settling says %d", c.preset, v.Repeats, s.Repeats)
		}
		if first := strings.SplitN(out.String(), "\n", 2)[0]; !strings.Contains(first, s.Words) {
			t.Errorf("%s: first line %q does not say %q", c.preset, first, s.Words)
		}
		for _, cd := range v.Conditions {
			if cd.CI95 != nil && (cd.CISettle == nil || cd.CISettle[0] > cd.Value || cd.CISettle[1] < cd.Value) {
				t.Errorf("%s: condition %s: interval at the rule's level %v, missing or not around the point %v", c.preset, cd.Name, cd.CISettle, cd.Value)
			}
		}
		e, _, runs, err := record.ReadResults(dir)
		if err != nil {
			t.Fatal(err)
		}
		if e.Spec.Repeats != s.Repeats {
			t.Errorf("%s: spec.yaml says %d repeats, the settling %d", c.preset, e.Spec.Repeats, s.Repeats)
		}
		if want := len(e.Runs()); len(runs) != want {
			t.Errorf("%s: %d runs recorded, want %d", c.preset, len(runs), want)
		}
	}
}

// TestSettleFlagsRefused holds --until-settled and --budget to one line
// and exit 2 for every bad use, before anything runs.
func TestSettleFlagsRefused(t *testing.T) {
	spec := filepath.Join("..", "..", "examples", "limits.yaml")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"f03-pool-size", "--until-settled"}, "needs --budget"},
		{[]string{"f03-pool-size", "--until-settled", "--budget", "-5m"}, "want 1s to"},
		{[]string{"f03-pool-size", "--until-settled", "--budget", "0"}, "want 1s to"},
		{[]string{"f03-pool-size", "--until-settled", "--budget", "ten minutes"}, "not a duration"},
		{[]string{"f03-pool-size", "--budget", "5m"}, "give both, or neither"},
		{[]string{spec, "--until-settled", "--budget", "5m"}, "has none"},
	} {
		for _, cmd := range []string{"sim", "run"} {
			dir := filepath.Join(t.TempDir(), "out")
			args := append([]string{cmd}, c.args...)
			args = append(args, "--out", dir)
			var out, errb bytes.Buffer
			code := runRoot(newRootCmd(), args, &out, &errb)
			msg := strings.TrimSpace(errb.String())
			if code != ExitUsage || strings.Count(msg, "\n") != 0 || !strings.Contains(msg, c.want) {
				t.Errorf("throttlelab %s: exit %d, stderr %q: want exit %d and one line saying %q", strings.Join(args, " "), code, msg, ExitUsage, c.want)
			}
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("throttlelab %s: refused, yet made %s", strings.Join(args, " "), dir)
			}
		}
	}
}
