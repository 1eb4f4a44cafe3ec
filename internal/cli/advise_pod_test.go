package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/internal/golden"
	"github.com/throttlelab/throttlelab/schemas/schematest"
	"github.com/throttlelab/throttlelab/units"
)

// TestAdvisePodDemand is issue 52's acceptance for advise: on the demand
// check's acceptance replays (an app of 0.44 cores with bursts of 1.5
// cores for 30 ms every 200 ms, a sidecar of 0.2 cores, on clocks 5 ms
// apart), advise --demand DIR recommends a pod-level and a per-container
// setting and says which is cheaper: the text (golden), the JSON held to
// podadvice.json, the patch of the pod template's spec.resources; bad
// input in one line each, exit 2.
func TestAdvisePodDemand(t *testing.T) {
	dir := t.TempDir()
	const epoch = 1_764_000_000 * time.Second
	podDemand(t, dir, "app", epoch, 60, func(t time.Duration) float64 {
		if t%(200*time.Millisecond) < 30*time.Millisecond {
			return 1.5
		}
		return 43.0 / 170
	})
	podDemand(t, dir, "proxy", epoch+5*time.Millisecond, 60, func(time.Duration) float64 { return 0.2 })
	pod := filepath.Join(dir, "shop", "web")
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := runRoot(newRootCmd(), args, &out, &errb)
		return code, out.String(), errb.String()
	}

	code, out, errs := run("advise", "--demand", pod)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || len(lines) > 15 || !strings.HasPrefix(lines[0], "answer: one pod-level limit of ") || !strings.Contains(out, "per-container limits app ") {
		t.Fatalf("advise --demand: exit %d %q:\n%s", code, errs, out)
	}
	golden.Compare(t, filepath.Join("testdata", "advise-pod", "acceptance.txt"), []byte(out))

	code, js, errs := run("advise", "--demand", pod, "-o", "json")
	if code != 0 {
		t.Fatalf("-o json: exit %d %q", code, errs)
	}
	schematest.Check(t, "advise --demand -o json", []byte(js))
	var a advise.PodAdvice
	if err := json.Unmarshal([]byte(js), &a); err != nil {
		t.Fatal(err)
	}
	perC, podL := a.Option(advise.PodPerContainer), a.Option(advise.PodLevel)
	if perC == nil || podL == nil || !perC.Met || !podL.Met || podL.PodLimitMilli <= 640 || a.Cheapest == "" || a.SavedMilli != perC.CostMilli-podL.CostMilli {
		t.Errorf("-o json: %+v", a)
	}

	code, patch, errs := run("advise", "--demand", pod, "-o", "patch")
	want := `kubectl -n shop patch deployment web --patch '{"spec":{"template":{"spec":{"resources":{"limits":{"cpu":"` + units.FormatMilliCPU(podL.PodLimitMilli) + `"}}}}}}'`
	if code != 0 || !strings.Contains(patch, want+"\n") || !strings.Contains(patch, "PodLevelResources") {
		t.Errorf("-o patch: exit %d %q:\n%s\nwant %s", code, errs, patch, want)
	}

	// Bad input: one line each, exit 2.
	one := t.TempDir()
	podDemand(t, one, "app", 0, 5, func(time.Duration) float64 { return 0.1 })
	apart := t.TempDir()
	podDemand(t, apart, "app", 0, 5, func(time.Duration) float64 { return 0.1 })
	podDemand(t, apart, "proxy", 10*time.Second, 5, func(time.Duration) float64 { return 0.1 })
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"advise", "--demand", filepath.Join(one, "shop", "web")}, "1 container CSVs (CONTAINER.csv): a pod's advice compares"},
		{[]string{"advise", "--demand", filepath.Join(apart, "shop", "web")}, "app, proxy: the containers' samples do not overlap in time"},
		{[]string{"advise", "--demand", filepath.Join(dir, "nope")}, "--demand " + filepath.Join(dir, "nope")},
		{[]string{"advise", "--demand", pod, "--csv", "x.csv"}, "drop --csv"},
	} {
		code, _, errs := run(tc.args...)
		if code != 2 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d %q; want 2 and one line naming %q", tc.args, code, errs, tc.want)
		}
	}
}
