package agreement

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/internal/cli"
)

// TestCommandsAgree runs the commands themselves, as a user types them
// (internal/cli.Run: flags, defaults, output formats), on the demand of
// TestPathsAgree: `advise --csv FILE -o json` must recommend what the
// library path recommends, and `check MANIFEST --demand DIR -o json` must
// pass the advised limit with advise's throttled share and fail 250m with
// the share advise evaluates there. A default that differs between the two
// commands, or a flag that changes what is computed, fails it.
func TestCommandsAgree(t *testing.T) {
	at, usage := burstDemand(10*time.Minute, 27500*time.Microsecond, 20*time.Millisecond)
	dir, csv := recordDemand(t, at, usage)
	d := cfs.FromSamples(at, usage)

	run := func(wantCode int, args ...string) []byte {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := cli.Run(args, &stdout, &stderr); code != wantCode {
			t.Fatalf("throttlelab %q: exit %d, want %d\n%s%s", args, code, wantCode, stdout.String(), stderr.String())
		}
		return stdout.Bytes()
	}

	var adv struct {
		Knee []struct {
			Share     float64 `json:"throttled_periods_ratio"`
			Target    bool    `json:"target"`
			LowMilli  int64   `json:"limit_low_millicores"`
			HighMilli int64   `json:"limit_high_millicores"`
		} `json:"knee"`
		Recommendation struct {
			LimitMilli     int64   `json:"limit_millicores"`
			ThrottledRatio float64 `json:"throttled_periods_ratio"`
			Met            bool    `json:"met"`
			LowerBound     bool    `json:"lower_bound"`
		} `json:"recommendation"`
	}
	if err := json.Unmarshal(run(0, "advise", "--csv", csv, "-o", "json"), &adv); err != nil {
		t.Fatal(err)
	}
	r := adv.Recommendation
	if !r.Met || r.LimitMilli != 300 || r.ThrottledRatio != 0 || r.LowerBound {
		t.Fatalf("advise --csv -o json recommends %+v; the library path (TestPathsAgree) 300m, unthrottled", r)
	}

	// The knee in the JSON, by its documented names: every period
	// throttles below 275m, none from it on.
	if len(adv.Knee) != 3 || !adv.Knee[2].Target {
		t.Errorf("advise --csv -o json: knee %+v, want 50%%, 20%% and 5%% (the target)", adv.Knee)
	}
	for _, k := range adv.Knee {
		if k.LowMilli > 275 || k.HighMilli < 275 {
			t.Errorf("advise --csv -o json: knee at %.2f from %dm to %dm, want 275m inside", k.Share, k.LowMilli, k.HighMilli)
		}
	}

	at250, err := advise.Evaluate(d, []advise.Point{{LimitMilli: 250, Period: 100 * time.Millisecond}}, advise.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		limit     int64
		code      int
		throttled float64
	}{{r.LimitMilli, 0, r.ThrottledRatio}, {250, 1, at250[0].ThrottledRatio}} {
		manifest := filepath.Join(dir, fmt.Sprintf("web-%d.yaml", c.limit))
		y := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: example
        resources: {limits: {cpu: %dm}, requests: {cpu: %dm}}
`, c.limit, c.limit)
		if err := os.WriteFile(manifest, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		var doc struct { // a CheckResult (schemas/checkresult.json)
			Containers []struct {
				Prediction struct {
					Known          bool    `json:"known"`
					ThrottledRatio float64 `json:"throttled_periods_ratio"`
				} `json:"prediction"`
				Violations []string `json:"violations"`
			} `json:"containers"`
		}
		if err := json.Unmarshal(run(c.code, "check", manifest, "--demand", dir, "-o", "json"), &doc); err != nil {
			t.Fatal(err)
		}
		out := doc.Containers
		if len(out) != 1 || !out[0].Prediction.Known || out[0].Prediction.ThrottledRatio != c.throttled || (len(out[0].Violations) == 0) != (c.code == 0) {
			t.Errorf("check at %dm: %+v; advise says throttled %.4f, exit %d", c.limit, out, c.throttled, c.code)
		}
	}
}
