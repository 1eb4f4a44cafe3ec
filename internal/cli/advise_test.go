package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/internal/golden"
)

// recordedDemands are every recorded demand in the repository that advise
// reads with --csv: the e2e fixture and advise's recorded groups.
var recordedDemands = []string{
	"cmd/throttlelab/testdata/advise-usage.csv",
	"advise/testdata/two-regime.csv",
	"advise/testdata/jvm-knee.csv.gz",
	"advise/testdata/jvm-start.csv.gz",
	"advise/testdata/nginx-knee.csv.gz",
}

// adviseOut runs throttlelab advise from the repository's root (the
// sources' names in the text are then the same wherever the test runs).
func adviseOut(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Run(append([]string{"advise"}, args...), &out, &errb); code != ExitOK {
		t.Fatalf("throttlelab advise %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	return out.String()
}

// TestAdviseBrief: on every recorded demand (the CSVs and the recorded
// runs) the default text is the
// answer in at most advise.BriefLines lines, with a delay target too; the
// default text (the answer, why, the burst alternative, the baselines,
// the warnings) is a golden file per CSV (go test ./internal/cli -run
// TestAdviseBrief -update rewrites them).
func TestAdviseBrief(t *testing.T) {
	t.Chdir("../..")
	inputs := map[string][]string{}
	for _, csv := range recordedDemands {
		inputs[strings.TrimSuffix(strings.TrimSuffix(filepath.Base(csv), ".gz"), ".csv")] = []string{"--csv", csv}
	}
	// Recorded runs, one throttled under its limit (the audit, the rebuilt
	// demand and its warnings add lines).
	for _, d := range []string{"limits", "limits-b", "limits-sim", "ramp"} {
		inputs[d+"-unlimited"] = []string{"report/testdata/" + d, "--config", "unlimited"}
		inputs[d+"-limited"] = []string{"report/testdata/" + d, "--config", "limited", "--instance", "limited-0"}
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			for _, extra := range [][]string{nil, {"--max-delay", "20ms"}, {"--max-throttled", "1%"}} {
				out := adviseOut(t, append(slices.Clone(in), extra...)...)
				lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
				if len(lines) > advise.BriefLines {
					t.Errorf("%v: %d lines, want at most %d:\n%s", extra, len(lines), advise.BriefLines, out)
				}
				if !strings.HasPrefix(lines[0], "Set the CPU limit to ") && !strings.HasPrefix(lines[0], "No limit up to ") {
					t.Errorf("%v: the first line is not the answer: %q", extra, lines[0])
				}
				if !strings.HasPrefix(lines[1], "Why ") {
					t.Errorf("%v: the second line is not why: %q", extra, lines[1])
				}
				if !strings.Contains(out, "Coarse recommenders on the same samples: ") || !strings.Contains(out, "--details") {
					t.Errorf("%v: no baselines line or no pointer to --details:\n%s", extra, out)
				}
				if extra == nil && in[0] == "--csv" {
					golden.Compare(t, filepath.Join("internal", "cli", "testdata", "advise-brief", name+".txt"), []byte(out))
				}
			}
		})
	}
}

// gridRow is a row of advise --details's grid: LIMIT BURST PERIOD ...
var gridRow = regexp.MustCompile(`^\s+(\d+m?|\d+(?:\.\d+)?)\s+(-|\d+m?|\d+(?:\.\d+)?)\s+(\d+)ms\s`)

// TestAdviseDetailsGroupsBurst: --details prints every evaluation of the
// grid once, the rows without burst first and then the rows with burst,
// each by limit, never interleaved.
func TestAdviseDetailsGroupsBurst(t *testing.T) {
	t.Chdir("../..")
	for _, csv := range []string{"cmd/throttlelab/testdata/advise-usage.csv", "advise/testdata/nginx-knee.csv.gz"} {
		out := adviseOut(t, "--csv", csv, "--details")
		var rows []string
		for _, l := range strings.Split(out, "\n") {
			if m := gridRow.FindStringSubmatch(l); m != nil {
				rows = append(rows, fmt.Sprintf("%s %s", m[1], m[2]))
			}
		}
		var doc struct{ Evaluations []json.RawMessage }
		if err := json.Unmarshal([]byte(adviseOut(t, "--csv", csv, "-o", "json")), &doc); err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(doc.Evaluations) {
			t.Fatalf("%s: %d grid rows in --details, %d evaluations in the JSON:\n%s", csv, len(rows), len(doc.Evaluations), out)
		}
		seenBurst := false
		var last float64
		for i, r := range rows {
			lim, burst, _ := strings.Cut(r, " ")
			if burst != "-" && !seenBurst {
				seenBurst, last = true, 0
			}
			if burst == "-" && seenBurst {
				t.Errorf("%s: row %d (%s) without burst after a row with burst", csv, i, r)
			}
			m := milli(t, lim)
			if m <= last {
				t.Errorf("%s: row %d (%s) not above the row before it (%gm)", csv, i, r, last)
			}
			last = m
		}
		if !seenBurst {
			t.Errorf("%s: no row with burst:\n%s", csv, out)
		}
	}
}

// milli reads a limit as the grid writes it: 300m or 1.5 (cores).
func milli(t *testing.T, s string) float64 {
	t.Helper()
	var v float64
	if strings.HasSuffix(s, "m") {
		fmt.Sscanf(strings.TrimSuffix(s, "m"), "%g", &v)
		return v
	}
	if _, err := fmt.Sscanf(s, "%g", &v); err != nil {
		t.Fatalf("limit %q: %v", s, err)
	}
	return 1000 * v
}
