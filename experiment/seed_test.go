package experiment

import "testing"

func TestRepeatSeed(t *testing.T) {
	seen := map[uint64]int{}
	for _, seed := range []uint64{1, 2, 42} {
		if got := RepeatSeed(seed, 1); got != seed {
			t.Errorf("repeat 1 of seed %d: %d, want the spec's seed", seed, got)
		}
		for rep := 1; rep <= 50; rep++ {
			s := RepeatSeed(seed, rep)
			if s == 0 {
				t.Errorf("seed %d repeat %d: 0", seed, rep)
			}
			if prev, ok := seen[s]; ok {
				t.Errorf("seed %d repeat %d: %d again (first at %d)", seed, rep, s, prev)
			}
			seen[s] = rep
			if RepeatSeed(seed, rep) != s {
				t.Errorf("seed %d repeat %d: not deterministic", seed, rep)
			}
		}
	}
}

func TestRunLoadConfigSeeds(t *testing.T) {
	e := &Experiment{}
	e.Spec.Seed = 7
	e.Spec.Configs = []Config{{Name: "a"}, {Name: "b"}}
	e.Spec.Loads = []Load{{Name: "l"}}
	e.Spec.Repeats = 3
	byRepeat := map[int]uint64{}
	for _, r := range e.Runs() {
		s := e.RunLoadConfig(r).Seed
		if prev, ok := byRepeat[r.Repeat]; ok && prev != s {
			t.Errorf("repeat %d: configs got seeds %d and %d, want one (common random numbers)", r.Repeat, prev, s)
		}
		byRepeat[r.Repeat] = s
	}
	if byRepeat[1] == byRepeat[2] || byRepeat[2] == byRepeat[3] || byRepeat[1] == byRepeat[3] {
		t.Errorf("repeats share seeds: %v", byRepeat)
	}
}
