package agent

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/testenv"
)

// TestByNeedAgreesOnRecordedDemand holds sampling by need to the 10 ms
// design (agreesByNeed: at every ladder limit, with and without a burst,
// the throttled share within 0.005 and the delay quantiles never below;
// the advice for each target the same ladder limit or one step higher) on
// demand recorded at 10 ms from real cgroups. The recordings, in testdata/demand (each
// file's comment says where and how it was taken): the rig's burner of make
// e2e-fleet after its resize (unthrottled), and the validation's demands
// (hack/validate-advise): its workloads poisson, burst and onoff run
// without a limit, and its programs nginx, postgresql and jvm under their
// own clients. Each is tiled to 10 minutes of 1-minute chunks and read with
// the default hot settings and with eager ones that let a container turn
// cold sooner (both read these demands at 10 ms 91-100% of the time).
func TestByNeedAgreesOnRecordedDemand(t *testing.T) {
	testenv.Arithmetic(t)
	const n = 10*60*100 + 1 // as TestByNeedAgreesWithTenMillisecondSampling
	files, err := filepath.Glob("testdata/demand/*.csv.gz")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"rig-burner", "poisson", "burst", "onoff", "nginx", "postgresql", "jvm"}
	have := map[string]bool{}
	type demand struct {
		name  string
		usage []time.Duration
	}
	var demands []demand
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".csv.gz")
		have[name] = true
		demands = append(demands, demand{name, tile(recordedGz(t, f), n)})
	}
	for _, w := range want {
		if !have[w] {
			t.Errorf("testdata/demand/%s.csv.gz is missing: the recorded demands are the rig's and the validation's", w)
		}
	}
	def := HotConfig{}
	def.defaults()
	eager := HotConfig{Margin: 0.05, Hold: 10 * time.Second}
	eager.defaults()
	for _, d := range demands {
		for _, h := range []HotConfig{def, eager} {
			t.Run(fmt.Sprintf("%s/margin=%.2f,hold=%s", d.name, h.Margin, h.Hold), func(t *testing.T) { agreesByNeed(t, &h, d.usage, nil) })
		}
	}
}

// recordedGz is recorded's reading of a gzipped usage CSV.
func recordedGz(t *testing.T, path string) []time.Duration {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	plain := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(path), ".gz"))
	if err := os.WriteFile(plain, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return recorded(t, plain)
}
