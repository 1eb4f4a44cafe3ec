package agent

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/cgroup"
)

var benchPhases = 0

func init() {
	flag.IntVar(&benchPhases, "phases", 0, "phases for the agent benchmarks (0: the default)")
}

// fleet200 is 200 containers' demand at 10 ms: a quarter bursty, a quarter
// moderate, half nearly idle, as on a busy node.
func fleet200(rounds int) (at [][]time.Duration, usage [][]time.Duration) {
	for i := range 200 {
		p := 0.02
		switch i % 4 {
		case 0:
			p = 0.35
		case 1:
			p = 0.15
		}
		a, u := bursty(uint64(i+1), rounds, p)
		at, usage = append(at, a), append(usage, u)
	}
	return at, usage
}

// BenchmarkAgentRound200 is one sampling round of the agent's summaries on
// 200 containers (every Add, and each chunk's replay when it completes,
// amortised), against the reference of reading 200 cpu.stat files once (what
// top pays per round anyway). round/read is the ratio; core% is the share of
// one core at a round every 10 ms.
func BenchmarkAgentRound200(b *testing.B) {
	const rounds = 6000 // one chunk
	at, usage := fleet200(rounds + 1)
	cfg := &SummaryConfig{Phases: benchPhases}
	cfg.defaults(4000)
	sums := make([]*ContainerSummary, 200)
	for i := range sums {
		sums[i] = NewSummary(cfg)
	}
	// the reference: 200 counter files read with pread and parsed
	dir := b.TempDir()
	var files []*cgroup.PreadFile
	for i := range 200 {
		p := filepath.Join(dir, fmt.Sprintf("cpu.stat.%d", i))
		os.WriteFile(p, []byte("usage_usec 123456789\nuser_usec 100000000\nsystem_usec 23456789\nnr_periods 12345\nnr_throttled 123\nthrottled_usec 4567890\nnr_bursts 0\nburst_usec 0\n"), 0o644)
		f, err := cgroup.OpenPreadFile(p, 1024)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		files = append(files, f)
	}
	read := func() {
		for _, f := range files {
			buf, _ := f.Read()
			cgroup.ParseCPUCounters(buf)
		}
	}
	refStart := time.Now()
	for range 2000 {
		read()
	}
	refPerRound := time.Since(refStart) / 2000

	b.ResetTimer()
	start := time.Now()
	lap := time.Duration(0)
	for n := 0; n < b.N; n++ {
		k := n%rounds + 1
		if k == 1 && n > 0 {
			lap += time.Duration(rounds) * 10 * time.Millisecond
		}
		for i, s := range sums {
			// a lap later, the same demand again
			u := usage[i][k] + time.Duration(n/rounds)*usage[i][rounds]
			if c := s.Add(at[i][k]+lap, u); c != nil {
				s.replayFold(c)
			}
		}
	}
	per := time.Since(start) / time.Duration(b.N)
	b.ReportMetric(float64(per)/float64(refPerRound), "round/read")
	b.ReportMetric(float64(per)/float64(10*time.Millisecond)*100, "core%")
}

// BenchmarkAgentAdvice200 fills 200 summaries with 24 blocks (as a day of
// 1-hour blocks; here 12 minutes of 30 s blocks), reports the heap they
// hold per container, and times the advice for all of them (two targets,
// with the krr, VPA and current limits evaluated), against advise on one
// container's raw samples of the same span (ratio per container).
func BenchmarkAgentAdvice200(b *testing.B) {
	const rounds = 12*60*100 + 1
	at, usage := fleet200(rounds)
	cfg := &SummaryConfig{Window: 12 * time.Minute, Block: 30 * time.Second, Chunk: 30 * time.Second}
	cfg.defaults(4000)
	sums := make([]*ContainerSummary, 200)
	for i := range sums {
		s := NewSummary(cfg)
		for k := range rounds {
			s.AddNow(at[i][k], usage[i][k])
		}
		sums[i] = s
	}
	var pts int
	for _, s := range sums {
		for _, bl := range s.Blocks() {
			pts += len(bl.Points)
		}
	}
	at = nil
	usage = nil
	var with, without runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&with)

	ref := func() time.Duration {
		a, u := bursty(1, rounds, 0.35)
		d := cfs.FromSamples(a, u)
		start := time.Now()
		if _, err := advise.Advise(d, advise.Request{}, advise.Sampled{}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}()
	targets := []advise.Target{{MaxThrottled: 0.01}, {MaxDelay: 10 * time.Millisecond}}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		for _, s := range sums {
			s.closed = nil // as after a block closes: the worst case
			advs, err := s.AdviceFor(AdviceInput{LimitMilli: 500}, targets)
			if err != nil {
				b.Fatal(err)
			}
			r := s.Recommenders()
			for _, m := range []int64{500, r.KrrMilli, r.VPAMilli, advs[0].Recommendation.LimitMilli} {
				if m > 0 {
					s.Evaluate(m, 0)
				}
			}
		}
	}
	all := time.Since(start) / time.Duration(b.N)
	b.ReportMetric(all.Seconds(), "s/all-200")
	b.StopTimer()
	for i := range sums {
		sums[i] = nil
	}
	runtime.GC()
	runtime.ReadMemStats(&without)
	b.ReportMetric(float64(int64(with.HeapInuse)-int64(without.HeapInuse))/200/1024, "KiB/container")
	b.ReportMetric(float64(pts)/200, "points/container")
	b.ReportMetric(float64(all/200)/float64(ref), "advice/advise-raw")
}
