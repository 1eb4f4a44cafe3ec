package agent

import (
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
)

// hotOver reads usage (cumulative, one sample every 10 ms) and throttled
// (cumulative nr_throttled, nil: none) as the agent samples one container
// by need (summarise's reading, no cap), with the agent's default target
// setting the lowest pick at each chunk's close and the first startup of
// the samples its start-up, and returns at which samples it was hot (read
// while hot, or asking to be at a grid instant) and its account.
func hotOver(cfg *SummaryConfig, h *HotConfig, usage []time.Duration, throttled []uint64, startup time.Duration) ([]bool, *need) {
	s := NewSummary(cfg)
	var n need
	hot := make([]bool, len(usage))
	was := true
	for i := range usage {
		at := time.Duration(i) * 10 * time.Millisecond
		grid := cfg.OnGrid(at, 0)
		if i > 0 && !grid && !was {
			continue
		}
		var thr uint64
		if throttled != nil {
			thr = throttled[i]
		}
		for _, c := range s.AddCounts(at, usage[i], thr) {
			r, err := cfg.Replay(c)
			if err != nil {
				panic(err)
			}
			s.Fold(r)
			n.floor.Store(s.lowestPick([]advise.Target{advise.DefaultTarget().WithDefaults()}))
		}
		was, _ = n.wants(h, cfg.Period, at, uint64(usage[i]), thr, grid, at < startup)
		hot[i] = was
	}
	return hot, &n
}

// TestIdleContainerGoesCold is the hot rule on make e2e-fleet's idle server
// (testdata/idle/rig-idler: serve under 500m, no requests; Go's forced
// collection every 2 minutes takes 1.2-2.1 ms in one period), tiled to 10
// minutes and read with the rig's summary settings (20 s chunks, 1-minute
// blocks) after a start-up of 60 s throttled twice in its first second (its
// calibration under 500m, as on the rig). The rig's agent found it hot for
// its whole run (hot 3 of 3): its start-up's throttling held it hot for
// HotConfig.Hold after the start-up, and each collection came within the
// margin of its lowest pick (10-20m: a threshold of 0.75-1.5 ms) and held
// it for Hold again. With HotConfig.MinCores, and a start-up's triggers
// holding nothing past it, it is cold from its first advice on (after the
// start-up and one chunk), and turns hot when its nr_throttled moves after
// the start-up. Busy containers near their lowest pick stay hot: the rig's
// burner (testdata/demand/rig-burner) and the rig's agent itself
// (testdata/idle/rig-agent: no limit, a lowest pick of tens of millicores,
// periods of 5-12.5 ms at its replays).
func TestIdleContainerGoesCold(t *testing.T) {
	const n = 10*60*100 + 1
	cfg := SummaryConfig{Window: 10 * time.Minute, Block: time.Minute, Chunk: 20 * time.Second}
	cfg.defaults(2000)
	h := HotConfig{}
	h.defaults()
	const startup = time.Minute
	idle := tile(recordedGz(t, "testdata/idle/rig-idler.csv.gz"), n)
	thr := make([]uint64, n)
	for i := range thr {
		thr[i] = min(uint64(i/40), 2) // the calibration: 2 periods throttled in its first 0.8 s
	}
	cold := startup + cfg.Chunk + cfg.Period // the start-up, then one chunk without advice
	hot, nd := hotOver(&cfg, &h, idle, thr, startup)
	for i, x := range hot {
		if at := time.Duration(i) * 10 * time.Millisecond; x && at >= cold {
			t.Fatalf("the idle server is hot at %s, after its start-up (%s) and its first chunk: %s (floor %dm)", at, startup, nd.why, nd.floor.Load())
		}
	}
	if !hot[0] {
		t.Error("the idle server is not hot at its start-up")
	}
	t.Logf("idle: cold from its first advice on, floor %dm: %s", nd.floor.Load(), nd.why)

	// Throttled after its start-up (a limit lowered under its collections):
	// hot at once, and for Hold.
	late := 7 * time.Minute
	thrLate := append([]uint64(nil), thr...)
	for i := int(late / (10 * time.Millisecond)); i < n; i++ {
		thrLate[i]++
	}
	hot, nd = hotOver(&cfg, &h, idle, thrLate, startup)
	for i := int(late / (10 * time.Millisecond)); i < n; i++ {
		if !hot[i] {
			t.Fatalf("the idle server throttled at %s is cold at %s, within Hold (%s): %s", late, time.Duration(i)*10*time.Millisecond, h.Hold, nd.why)
		}
	}

	for _, f := range []string{"testdata/demand/rig-burner.csv.gz", "testdata/idle/rig-agent.csv.gz"} {
		hot, nd := hotOver(&cfg, &h, tile(recordedGz(t, f), n), nil, 0)
		k := 0
		for _, x := range hot[int(cold/(10*time.Millisecond)):] {
			if x {
				k++
			}
		}
		share := float64(k) / float64(len(hot)-int(cold/(10*time.Millisecond)))
		t.Logf("%s: hot %.3f of the samples after %s, floor %dm: %s", f, share, cold, nd.floor.Load(), nd.why)
		if !hot[n-1] || share < 0.9 {
			t.Errorf("%s: hot %.3f of the samples after %s, at the end %v: a container near its lowest pick must stay hot (%s)", f, share, cold, hot[n-1], nd.why)
		}
	}
}

// TestNoAdviceReadOnTheGrid: a container found with the agent (not
// starting) and without advice yet is read at 10 ms for its first grid
// period only, then on the grid while its periods stay under
// HotConfig.MinCores (make e2e-fleet's idle server), and at 10 ms until
// its first advice once one reaches it (the rig's burner); one seen to
// start is hot for its whole start-up, and its start-up's periods hold
// nothing past it. Until 2026-11-28 every container
// without advice asked to be hot for its whole first chunk.
func TestNoAdviceReadOnTheGrid(t *testing.T) {
	const n = 3*60*100 + 1
	cfg := SummaryConfig{Window: 10 * time.Minute, Block: time.Minute, Chunk: 20 * time.Second}
	cfg.defaults(2000)
	h := HotConfig{}
	h.defaults()
	step := 10 * time.Millisecond
	idle := tile(recordedGz(t, "testdata/idle/rig-idler.csv.gz"), n)
	hot, nd := hotOver(&cfg, &h, idle, nil, 0)
	if !hot[0] {
		t.Error("the idle server is not read at 10 ms at its first sample")
	}
	for i, x := range hot {
		if at := time.Duration(i) * step; x && at >= cfg.Period {
			t.Fatalf("the idle server, found without advice, is hot at %s: %s (floor %dm)", at, nd.why, nd.floor.Load())
		}
	}
	hot, _ = hotOver(&cfg, &h, idle, nil, time.Minute)
	for i := range int(time.Minute / step) {
		if !hot[i] {
			t.Fatalf("the idle server seen to start is cold at %s, within its start-up", time.Duration(i)*step)
		}
	}
	// A busy start-up (half a core for its 30 s) without advice, idle
	// after, its first advice at 40 s: its periods hold nothing past it.
	const startup = 30 * time.Second
	var boot need
	var used time.Duration
	for at := time.Duration(0); at < 2*time.Minute; at += step {
		if at < startup-cfg.Period { // no period over its end
			used += 5 * time.Millisecond
		}
		if at == 40*time.Second {
			boot.floor.Store(500)
		}
		if want, _ := boot.wants(&h, cfg.Period, at, uint64(used), 0, cfg.OnGrid(at, 0), at < startup); want && at >= startup {
			t.Fatalf("idle after a busy start-up (to %s), hot at %s: %s", startup, at, boot.why)
		}
	}
	burner := tile(recordedGz(t, "testdata/demand/rig-burner.csv.gz"), n)
	hot, nd = hotOver(&cfg, &h, burner, nil, 0)
	busyAt := -1
	for i := 1; i < int(cfg.Chunk/step); i++ {
		if at := time.Duration(i) * step; cfg.OnGrid(at, 0) && burner[i]-burner[i-int(cfg.Period/step)] >= time.Duration(h.MinCores*float64(cfg.Period)) {
			busyAt = i
			break
		}
	}
	if busyAt < 0 {
		t.Fatal("the burner has no period of MinCores in its first chunk")
	}
	for i := busyAt; i < int(cfg.Chunk/step); i++ {
		if !hot[i] {
			t.Fatalf("the burner, a period of MinCores or more at %s, is cold at %s before its first advice: %s", time.Duration(busyAt)*step, time.Duration(i)*step, nd.why)
		}
	}
}
