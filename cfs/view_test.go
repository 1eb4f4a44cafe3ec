package cfs_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/cfs/cfstest"
)

// TestViewReplaysAsARebasedCopy: a View (a block of a demand, sharing its
// samples) cuts, counts and replays exactly as a copy of the same samples
// rebased to start at 0 (the blocks advise cut before views), at both
// phases, with and without burst, at limits from under the mean use
// (work waiting for minutes) to above the peaks, delays included.
func TestViewReplaysAsARebasedCopy(t *testing.T) {
	at, usage := cfstest.DayCycle(60_000) // 10 minutes
	d := cfs.FromSamples(at, usage).Pinned()
	for _, blk := range [][2]int{{0, 20_000}, {17_345, 41_002}, {41_001, 60_000}} {
		i, j := blk[0], blk[1]
		view := d.View(i, j)
		rebased := d.Derive(slices.Clone(d.At[i:j]), d.Usage[i:j], i)
		for k := range rebased.At {
			rebased.At[k] -= d.At[i]
		}
		if view.Duration() != rebased.Duration() || view.MeanCores() != rebased.MeanCores() || view.Bound() != rebased.Bound() {
			t.Fatalf("block %v: view spans %s at %.6f cores on %.0f, copy %s at %.6f on %.0f", blk,
				view.Duration(), view.MeanCores(), view.Bound(), rebased.Duration(), rebased.MeanCores(), rebased.Bound())
		}
		if err := view.Check(100 * time.Millisecond); err != nil {
			t.Fatalf("block %v: %v", blk, err)
		}
		for _, phase := range []time.Duration{0, 50 * time.Millisecond} {
			pv, pr := cfs.Cut(view, 100*time.Millisecond, phase), cfs.Cut(rebased, 100*time.Millisecond, phase)
			if pv.Start != pr.Start || !slices.Equal(pv.Work, pr.Work) {
				t.Fatalf("block %v phase %s: the view's cut differs from the copy's", blk, phase)
			}
			var settings []cfs.Setting
			for _, milli := range []int64{200, 300, 400, 700, 1500} {
				q := time.Duration(milli) * 100 * time.Microsecond
				for _, burst := range []time.Duration{0, q} {
					settings = append(settings, cfs.Setting{Quota: q, Burst: burst, Cores: view.Bound()})
				}
			}
			if cv, cr := pv.CountLadder(settings), pr.CountLadder(settings); !reflect.DeepEqual(cv, cr) {
				t.Errorf("block %v phase %s: counts %v, the copy's %v", blk, phase, cv, cr)
			}
			throttled := 0
			for _, s := range settings {
				hv, hr := &cfs.DelayHist{}, &cfs.DelayHist{}
				rv, rr := pv.Replay(s, hv, nil), pr.Replay(s, hr, nil)
				if !reflect.DeepEqual(rv, rr) || *hv != *hr {
					t.Errorf("block %v phase %s quota %s burst %s: the view's replay %+v differs from the copy's %+v", blk, phase, s.Quota, s.Burst, rv.Stat, rr.Stat)
				}
				if rv.Stat.ThrottledPeriods > 0 && hv.Quantile(0.99) > 0 {
					throttled++
				}
			}
			if throttled == 0 {
				t.Errorf("block %v phase %s: no setting throttled: the test compares nothing that waits", blk, phase)
			}
		}
	}
}

// TestAlongCutsAsCut: a cut of a Scaled demand taken along its source's
// cut (sharing its sample index) is the cut Cut makes, and replays alike;
// given back (Recycle), it leaves the source's cut whole for a later cut
// that takes its storage. A demand at other times is cut anew.
func TestAlongCutsAsCut(t *testing.T) {
	at, usage := cfstest.DayCycle(30_000)
	d := cfs.FromSamples(at, usage).Pinned()
	for _, phase := range []time.Duration{0, 30 * time.Millisecond} {
		src := cfs.Cut(d, 100*time.Millisecond, phase)
		s := cfs.Setting{Quota: 30 * time.Millisecond, Burst: 30 * time.Millisecond, Cores: d.Bound()}
		before := src.Replay(s, &cfs.DelayHist{}, nil)
		for _, f := range []float64{0.97, 1.03} {
			sd := d.Scaled(f)
			along, cut := src.Along(sd), cfs.Cut(sd, 100*time.Millisecond, phase)
			if along.Start != cut.Start || !slices.Equal(along.Work, cut.Work) {
				t.Fatalf("phase %s scale %.2f: the cut along differs from Cut's", phase, f)
			}
			ha, hc := &cfs.DelayHist{}, &cfs.DelayHist{}
			if ra, rc := along.Replay(s, ha, nil), cut.Replay(s, hc, nil); !reflect.DeepEqual(ra.Stat, rc.Stat) || ra.ThrottledNs != rc.ThrottledNs || *ha != *hc {
				t.Errorf("phase %s scale %.2f: replay along %+v, Cut's %+v", phase, f, ra.Stat, rc.Stat)
			}
			along.Recycle()
			cfs.Cut(d.View(0, 20_000), 100*time.Millisecond, phase) // may take along's storage
		}
		if after := src.Replay(s, &cfs.DelayHist{}, nil); !reflect.DeepEqual(after.Stat, before.Stat) || after.ThrottledNs != before.ThrottledNs {
			t.Errorf("phase %s: the source's replay moved from %+v to %+v after a cut along it was given back", phase, before.Stat, after.Stat)
		}
		other := d.View(1, len(d.At))
		if got := src.Along(other); !slices.Equal(got.Work, cfs.Cut(other, 100*time.Millisecond, phase).Work) {
			t.Errorf("phase %s: a demand at other times, cut along: not Cut's", phase)
		}
	}
}
