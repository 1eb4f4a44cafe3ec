package agent

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The tests in this file FAIL on the agent (branch fleet-red, then coarse,
// kept apart so that make test stays green): the delays of periods read on
// the coarse grid fall below what 10 ms samples give, which the design says
// cannot happen (docs/fleet.md, "A coarse interval is an upper bound"). As
// of 2026-11-27 their throttled counts agree and what remains below comes
// from the 10 ms replay's samples above the parallelism bound (late
// readings, Chunk.demand); the replay records delays per unit of work
// since then, which made TestByNeedAgreesOnThreadsOnOff (need_threads_test.go)
// pass.

// TestByNeedAgreesOnRecordedDemandReadCold is TestByNeedAgreesOnRecordedDemand
// with hot settings under which a container is hot only from a period at
// its lowest pick to the next grid instant: each recording is read on the
// grid about 80% of the time, so the coarse reads' bounds are what is
// tested.
func TestByNeedAgreesOnRecordedDemandReadCold(t *testing.T) {
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
