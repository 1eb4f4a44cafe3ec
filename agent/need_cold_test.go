package agent

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/testenv"
)

// TestByNeedAgreesOnRecordedDemandReadCold is TestByNeedAgreesOnRecordedDemand
// with hot settings under which a container is hot only from a period at
// its lowest pick to the next grid instant: each recording is read on the
// grid about 80% of the time, so the coarse reads' bounds are what is
// tested (docs/fleet.md, "A coarse interval is an upper bound"). Where the
// periods that decide an advice are read on the grid, the advice is held
// to the 10 ms design's on the demand as read by need (asByNeed; poisson's
// delay target, docs/fleet.md).
func TestByNeedAgreesOnRecordedDemandReadCold(t *testing.T) {
	testenv.Arithmetic(t)
	const n = 10*60*100 + 1
	files, err := filepath.Glob("testdata/demand/*.csv.gz")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/demand/*.csv.gz: %v", err)
	}
	cold := HotConfig{Margin: 0.001, Hold: time.Millisecond}
	cold.defaults()
	for _, f := range files {
		usage := tile(recordedGz(t, f), n)
		t.Run(strings.TrimSuffix(filepath.Base(f), ".csv.gz"), func(t *testing.T) { agreesByNeed(t, &cold, usage, nil) })
	}
}
