package agent

import (
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
)

// TestSummaryPerCPUSplit: a container whose every sample has a per-CPU
// reading (NotePerCPU) replays its chunks with the split, its blocks and
// its advice say it ran on both CPUs and that the slices were modelled,
// also with a reading missing or readings from the middle of a chunk on (the
// intervals without one take the chunk's split); a container with none
// replays without it. (What the slices change is cfs's to validate.)
func TestSummaryPerCPUSplit(t *testing.T) {
	run := func(readings func(k int) bool) *ContainerSummary {
		s := NewSummary(testConfig())
		var usage time.Duration
		cum := []uint64{0, 0}
		for k := 0; k <= 6000*2; k++ { // two one-minute chunks
			at := time.Duration(k) * 10 * time.Millisecond
			if k > 0 {
				// two threads busy for 20 ms out of every 100 ms, one on
				// each CPU, over a trickle on CPU 0
				du := 100 * time.Microsecond
				if k%10 < 2 {
					du += 20 * time.Millisecond
					cum[1] += uint64(10 * time.Millisecond)
				}
				cum[0] += uint64(du) - min(uint64(du), uint64(10*time.Millisecond)*uint64(boolInt(k%10 < 2)))
				usage += du
			}
			if readings(k) {
				s.NotePerCPU(at, cum)
			}
			s.AddNow(at, usage)
		}
		s.replayFold(s.Flush())
		return s
	}
	split := run(func(int) bool { return true })
	none := run(func(int) bool { return false })
	holed := run(func(k int) bool { return k != 3000 }) // the first chunk's sample 3000 has none
	count := func(s *ContainerSummary) (cpus, chunks int) {
		for _, b := range s.Blocks() {
			cpus, chunks = max(cpus, b.CPUs), chunks+b.SplitChunks
		}
		return cpus, chunks
	}
	if cpus, chunks := count(split); cpus != 2 || chunks != 2 || split.CPUs() != 2 {
		t.Errorf("with every reading: %d CPUs over %d split chunks (CPUs() %d), want 2 over 2", cpus, chunks, split.CPUs())
	}
	if cpus, chunks := count(none); cpus != 0 || chunks != 0 {
		t.Errorf("without readings: %d CPUs over %d split chunks, want none", cpus, chunks)
	}
	if cpus, chunks := count(holed); cpus != 2 || chunks != 2 {
		t.Errorf("with a reading missing in the first chunk: %d CPUs over %d split chunks, want 2 over 2", cpus, chunks)
	}
	late := run(func(k int) bool { return k > 3000 }) // readings from the middle of the first chunk on
	if cpus, chunks := count(late); cpus != 2 || chunks != 2 {
		t.Errorf("with readings from the middle of the first chunk on: %d CPUs over %d split chunks, want 2 over 2", cpus, chunks)
	}
	targets := []advise.Target{{MaxThrottled: 0.01}}
	advs, err := split.AdviceFor(AdviceInput{}, targets)
	if err != nil {
		t.Fatal(err)
	}
	if s := advs[0].Sampled; s.CPUs != 2 || !s.SliceModel {
		t.Errorf("advice's sample: %d CPUs, slice model %v; want 2, true", s.CPUs, s.SliceModel)
	}
	fluid, err := none.AdviceFor(AdviceInput{}, targets)
	if err != nil {
		t.Fatal(err)
	}
	if fluid[0].Sampled.CPUs != 0 || fluid[0].Sampled.SliceModel {
		t.Errorf("advice without readings says %d CPUs, slice model %v", fluid[0].Sampled.CPUs, fluid[0].Sampled.SliceModel)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
