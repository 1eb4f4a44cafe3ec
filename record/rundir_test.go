package record

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
)

func TestGroupNames(t *testing.T) {
	for _, c := range []struct{ group, back string }{
		{InstanceGroup(3, "limited-1"), "limited-1"},
		{NeighbourGroup(12, "burst"), "n-burst"},
		{"loadgen", "loadgen"},
		{"rabc-x", "rabc-x"},
	} {
		if got := GroupInstance(c.group); got != c.back {
			t.Errorf("GroupInstance(%q) = %q, want %q", c.group, got, c.back)
		}
	}
	if g := InstanceGroup(3, "limited-1"); g != "r003-limited-1" {
		t.Errorf("InstanceGroup = %q", g)
	}
	if g := NeighbourGroup(3, "burst"); g != "r003-n-burst" {
		t.Errorf("NeighbourGroup = %q", g)
	}
}

// writeRun gives a writer two instances and a neighbour, three samples and
// their stats, as a backend does.
func writeRun(t *testing.T, w *RunWriter) *Run {
	t.Helper()
	rs := &Run{Instances: []string{"lim-0", "lim-1"}}
	w.AddInstance("lim-0")
	w.AddInstance("lim-1")
	w.AddNeighbour("noise")
	if err := w.StartUsage(); err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 3; k++ {
		at := time.Duration(k) * 10 * time.Millisecond
		w.Sample(cgroup.UsageSample{At: at, Usage: []time.Duration{at / 2, at / 4, at}, Throttled: []uint64{uint64(k), 0, 0}, Periods: []uint64{0, 0, 0}})
	}
	if err := w.CloseUsage(); err != nil {
		t.Fatal(err)
	}
	stats := []cgroup.CPUStat{{Periods: 10, ThrottledPeriods: 2}, {Periods: 10, ThrottledPeriods: 1}, {Periods: 5}}
	none := cgroup.Settings{QuotaUsec: -1}
	w.Assemble(rs, stats, []cgroup.Settings{none, none, none})
	return rs
}

func TestRunWriter(t *testing.T) {
	dir := t.TempDir()
	rs := writeRun(t, NewRunWriter(dir, 7))
	usage, err := os.ReadFile(filepath.Join(dir, UsageFile))
	if err != nil {
		t.Fatal(err)
	}
	want := "t_ns,r007-lim-0,r007-lim-1,r007-n-noise\n0,0,0,0\n10000000,5000000,2500000,10000000\n20000000,10000000,5000000,20000000\n"
	if string(usage) != want {
		t.Errorf("usage.csv:\n%s\nwant\n%s", usage, want)
	}
	thr, err := os.ReadFile(filepath.Join(dir, ThrottledFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := "t_ns,r007-lim-0,r007-lim-1,r007-n-noise\n0,0,0,0\n10000000,1,0,0\n20000000,2,0,0\n"; string(thr) != want {
		t.Errorf("throttled.csv:\n%s\nwant\n%s", thr, want)
	}
	// Instances by name, their sum in Total; the neighbour by group name.
	if rs.CPUStat["lim-1"].ThrottledPeriods != 1 || rs.Total.Periods != 20 || rs.Total.ThrottledPeriods != 3 {
		t.Errorf("instances' stats %+v, total %+v", rs.CPUStat, rs.Total)
	}
	if _, ok := rs.CPUStat["noise"]; ok || rs.Neighbours["r007-n-noise"].Periods != 5 {
		t.Errorf("neighbour's stats %+v (instances %+v)", rs.Neighbours, rs.CPUStat)
	}
	if m := rs.Usage["lim-0"].Mean; m != 0.5 {
		t.Errorf("lim-0 mean %.3f cores, want 0.5", m)
	}
	if m := rs.NeighbourUsage["r007-n-noise"].Mean; m != 1 {
		t.Errorf("neighbour mean %.3f cores, want 1", m)
	}
	// What the writer wrote reads back through the readers of the directory.
	u, err := ReadUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if col, ok := u.Column(7, "noise"); !ok || col[2] != 20*time.Millisecond {
		t.Errorf("ReadUsage column of the neighbour: %v, %v", col, ok)
	}
}

func TestRunWriterInMemory(t *testing.T) {
	w := NewRunWriter("", 0)
	rs := writeRun(t, w)
	if f, err := w.Create(RequestsFile); f != nil || err != nil {
		t.Errorf("Create in memory: %v, %v; want nil, nil", f, err)
	}
	if err := w.WriteHist(nil, time.Time{}); err != nil {
		t.Error(err)
	}
	if len(w.Samples()) != 3 || rs.Usage["lim-1"].Mean != 0.25 {
		t.Errorf("in memory: %d samples, lim-1 mean %.3f; want 3, 0.25", len(w.Samples()), rs.Usage["lim-1"].Mean)
	}
}

func TestRunWriterCloseFiles(t *testing.T) {
	dir := t.TempDir()
	w := NewRunWriter(dir, 0)
	f, err := w.Create(BurstFile("pulse"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.CloseFiles(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("x")); err == nil {
		t.Error("the file is still open after CloseFiles")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "burst-pulse.jsonl")); err != nil || string(b) != "{}\n" {
		t.Errorf("burst-pulse.jsonl: %q, %v", b, err)
	}
}

func TestReadColumnsRefuses(t *testing.T) {
	for _, c := range []struct{ name, body string }{
		{"few fields", "t_ns,a,b\n0,1\n"},
		{"many fields", "t_ns,a\n0,1,2\n"},
		{"trailing comma", "t_ns,a\n0,1,\n"},
		{"not a number", "t_ns,a\n0,x\n"},
		{"empty line", "t_ns,a\n0,1\n\n"},
	} {
		path := filepath.Join(t.TempDir(), "usage.csv")
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadColumns(path); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	path := filepath.Join(t.TempDir(), "usage.csv")
	os.WriteFile(path, []byte("t_ns,a,b\n0,-1,9223372036854775807\n10,2,3\n"), 0o644)
	c, err := ReadColumns(path)
	if err != nil || c.At[1] != 10 || c.Cols[0][0] != -1 || c.Cols[1][0] != 9223372036854775807 || c.Cols[1][1] != 3 {
		t.Errorf("columns %+v, %v", c, err)
	}
}

func TestNeighbourGroupNames(t *testing.T) {
	g := NeighbourGroup(3, "noise-1")
	if g != "r003-n-noise-1" || !IsNeighbourGroup(g, "noise-1") {
		t.Errorf("%q", g)
	}
	for _, other := range []string{"r003-noise-1", "r003-n-noise-10", "n-noise-1", "r003-n-"} {
		if IsNeighbourGroup(other, "noise-1") {
			t.Errorf("%q taken for neighbour noise-1", other)
		}
	}
}

// TestRunWriterKeepsFigures: the writer keeps each sample's figures, not
// its slices (the simulator gives the same slices every time), grows past
// its first room, and hands them to Held as columns; a group without
// nr_periods in some sample has no peak within a period.
func TestRunWriterKeepsFigures(t *testing.T) {
	w := NewRunWriter(t.TempDir(), 1)
	w.AddInstance("a")
	w.AddInstance("b")
	if err := w.StartUsage(); err != nil {
		t.Fatal(err)
	}
	const n = 3000 // over the first room of 1024
	buf := cgroup.UsageSample{Usage: make([]time.Duration, 2), Throttled: make([]uint64, 2), Periods: make([]uint64, 2)}
	for j := range n {
		buf.At = time.Duration(j) * 10 * time.Millisecond
		buf.Usage[0], buf.Usage[1] = time.Duration(j)*5*time.Millisecond, time.Duration(j)*time.Millisecond
		buf.Throttled[0], buf.Periods[0], buf.Periods[1] = uint64(j/10), uint64(j/10), uint64(j/10)
		w.Sample(buf)
	}
	if err := w.CloseUsage(); err != nil {
		t.Fatal(err)
	}
	h := w.Held(nil)
	if len(h.At) != n || len(h.Usage) != 2 || len(h.Usage[1]) != n || len(h.Throttled[0]) != n {
		t.Fatalf("held %d times, %d groups", len(h.At), len(h.Usage))
	}
	for _, j := range []int{0, 1023, 1024, n - 1} {
		if h.At[j] != time.Duration(j)*10*time.Millisecond || h.Usage[0][j] != time.Duration(j)*5*time.Millisecond ||
			h.Usage[1][j] != time.Duration(j)*time.Millisecond || h.Throttled[0][j] != uint64(j/10) || h.Throttled[1][j] != 0 {
			t.Errorf("sample %d held as %v %v %v %v %v", j, h.At[j], h.Usage[0][j], h.Usage[1][j], h.Throttled[0][j], h.Throttled[1][j])
		}
	}
	if s := w.Samples(); len(s) != n || s[1500].Usage[1] != 1500*time.Millisecond || s[1500].Periods[0] != 150 {
		t.Errorf("Samples: %d, sample 1500 %+v", len(s), s[1500])
	}
	set := cgroup.Settings{QuotaUsec: 50000, PeriodUsec: 100000}
	if p := PeakPeriodOf(w.Samples(), 0, set); math.Abs(p-0.5) > 1e-9 {
		t.Errorf("peak within a period %.3f cores, want 0.5", p)
	}
	// One sample without nr_periods: no peak within a period.
	samples := w.Samples()
	samples[n/2].Periods = nil
	if p := PeakPeriodOf(samples, 0, set); p != 0 {
		t.Errorf("peak within a period %.3f cores with a sample without nr_periods, want 0", p)
	}
}
