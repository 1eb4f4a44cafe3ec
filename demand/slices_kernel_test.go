package demand

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/testenv"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// sliceKernelLoads are TestSliceModelKernel's loads: two threads each busy
// a share of each 10 ms (the case where a CPU holds less than a whole
// slice), and two threads each busy through whole slices.
var sliceKernelLoads = []struct {
	name string
	spec workerSpec
}{
	{"short 1-3ms/10ms", workerSpec{Threads: 2, BusyMin: time.Millisecond, BusyMax: 3 * time.Millisecond, Every: 10 * time.Millisecond, Seed: 1}},
	{"long 20-40ms/100ms", workerSpec{Threads: 2, BusyMin: 20 * time.Millisecond, BusyMax: 40 * time.Millisecond, Every: 100 * time.Millisecond, Seed: 2}},
}

// scaledDemand is d with its use scaled by f (its per-CPU split kept:
// the replay takes only each interval's shares from it).
func scaledDemand(d *advise.Demand, f float64) *advise.Demand {
	o := *d
	o.Usage = make([]time.Duration, len(d.Usage))
	for i, u := range d.Usage {
		o.Usage[i] = d.Usage[0] + time.Duration(float64(u-d.Usage[0])*f)
	}
	return &o
}

// dumpDemand logs d as a gzip-compressed CSV in base64 after what, on one
// line (THROTTLELAB_SLICE_KERNEL_DUMP set): the guest of the VM matrix
// keeps no file, and its samples replayed again on the host are how a
// change to the slice replay is checked against the kernel's counts.
func dumpDemand(t *testing.T, d *advise.Demand, what string) {
	t.Helper()
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	if err := WriteCSV(z, d); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("demand %s %s", what, base64.StdEncoding.EncodeToString(b.Bytes()))
}

// sliceKernelEnv, set to 1, runs TestSliceModelKernel.
const sliceKernelEnv = "THROTTLELAB_SLICE_KERNEL"

// sliceKernelTimes are how long TestSliceModelKernel samples, lets each
// limit settle and counts under it. THROTTLELAB_SLICE_KERNEL_WINDOW (a
// duration) replaces the sampling and counting windows, for a measurement
// longer than the test needs.
func sliceKernelTimes(t *testing.T) (sample, settle, window time.Duration) {
	sample, settle, window = 6*time.Second, time.Second, 6*time.Second
	if v := os.Getenv("THROTTLELAB_SLICE_KERNEL_WINDOW"); v != "" {
		w, err := time.ParseDuration(v)
		if err != nil || w < time.Second {
			t.Fatalf("THROTTLELAB_SLICE_KERNEL_WINDOW=%q: want a duration of 1s or more", v)
		}
		sample, window = w, w
	}
	return sample, settle, window
}

// TestSliceModelKernel checks the slice replay against the kernel on the
// test binary itself as a load (runWorker) at 1 and 2 CPUs, as the
// validation harness checks programs: the load is sampled unlimited in a
// group of its own, then, with it running on, limited where advise
// predicts about 50%, 20% and 5% of periods throttled, and the kernel's
// nr_throttled/nr_periods counted under each. The slice replay (advise's
// prediction, from the per-CPU split: cpuacct on v1, the threads on v2)
// and the fluid replay (the same demand without the split) are logged
// beside the kernel's count, a line per limit, and again at the use
// measured under the limit (docs/advise.md has a
// measured table on 6.1, 6.12 and 6.18). The assertions are shapes.
//
// It is a measurement of minutes on a host and in each VM cell,
// so it runs only with THROTTLELAB_SLICE_KERNEL=1 (make validate-slices:
// the host and the 6.1 and 6.12 cells); make test skips it.
func TestSliceModelKernel(t *testing.T) {
	if os.Getenv(sliceKernelEnv) != "1" {
		t.Skipf("a measurement of minutes: %s=1 runs it (make validate-slices)", sliceKernelEnv)
	}
	sample, settle, window := sliceKernelTimes(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, load := range sliceKernelLoads {
		for _, cpus := range []string{"0", "0,1"} {
			t.Run(load.name+"/cpus="+cpus, func(t *testing.T) {
				g := cgrouptest.LimitedGroup(t, 100000, 100000)
				g.SetQuota(t, -1)
				dirs := watchtest.WithUsage(t, g)
				startWorker(t, exe, dirs, cpus, load.spec)
				grp, err := FindPath("/", watchtest.CgroupPath(t, g.Dir))
				if err != nil {
					t.Fatal(err)
				}
				d, _, err := Sample(context.Background(), grp, sample, nil)
				if err != nil {
					t.Fatal(err)
				}
				if d.PerCPU == nil {
					t.Fatalf("no per-CPU split sampled for the group (%s, %s): the slice replay cannot run", g.Version, testenv.VM())
				}
				want := strings.Count(cpus, ",") + 1
				if got := d.CPUsUsed(); got != want {
					t.Fatalf("ran on %d CPUs by the per-CPU split, want %d (pinned to %s)", got, want, cpus)
				}
				flat := *d
				flat.PerCPU, flat.Cores = nil, int(d.Bound())
				pts := kneePoints(t, d)
				if len(pts) < 2 {
					t.Fatalf("the knee's limits %v: want at least two apart (mean use %.3f cores)", pts, d.MeanCores())
				}
				slices, err := advise.Evaluate(d, pts, advise.Options{})
				if err != nil {
					t.Fatal(err)
				}
				fluid, err := advise.Evaluate(&flat, pts, advise.Options{})
				if err != nil {
					t.Fatal(err)
				}
				use, err := NewSampler(grp)
				if err != nil {
					t.Fatal(err)
				}
				defer use.Close()
				kernel := make([]float64, len(pts))
				for i, p := range pts {
					g.SetQuota(t, int(p.LimitMilli*int64(p.Period/time.Microsecond)/1000))
					time.Sleep(settle) // the limit's first periods are not counted
					before := g.Stat(t)
					u0, err := use.Read()
					if err != nil {
						t.Fatal(err)
					}
					t0 := time.Now()
					time.Sleep(window)
					u1, err := use.Read()
					if err != nil {
						t.Fatal(err)
					}
					span := time.Since(t0)
					after := g.Stat(t)
					periods, thr := after["nr_periods"]-before["nr_periods"], after["nr_throttled"]-before["nr_throttled"]
					if periods <= 0 {
						t.Fatalf("at %s the kernel counted no periods over %s", p, window)
					}
					kernel[i] = float64(thr) / float64(periods)
					// The replays again at the use measured under the
					// limit: where the load's use moved, they say what
					// the model gives for the demand the kernel saw.
					under := float64(u1-u0) / float64(span)
					at, err := advise.Evaluate(scaledDemand(d, under/d.MeanCores()), pts[i:i+1], advise.Options{})
					if err != nil {
						t.Fatal(err)
					}
					atFluid, err := advise.Evaluate(scaledDemand(&flat, under/d.MeanCores()), pts[i:i+1], advise.Options{})
					if err != nil {
						t.Fatal(err)
					}
					t.Logf("%s | %s | %d | %s | %.3f (%d of %d) | %.3f | %.3f | sampled %.3f cores, %.3f under the limit: %.3f | %.3f",
						testenv.VM()+" "+g.Version, load.name, want, p, kernel[i], thr, periods, slices[i].ThrottledRatio, fluid[i].ThrottledRatio,
						d.MeanCores(), under, at[0].ThrottledRatio, atFluid[0].ThrottledRatio)
				}
				g.SetQuota(t, -1)
				if os.Getenv("THROTTLELAB_SLICE_KERNEL_DUMP") != "" {
					dumpDemand(t, d, fmt.Sprintf("%s %s cpus=%s %v %v", testenv.VM()+" "+g.Version, load.name, cpus, pts, kernel))
				}
				last := len(pts) - 1
				if kernel[0] == 0 {
					t.Errorf("at %s, where the slice replay predicts %.3f, the kernel throttled no period", pts[0], slices[0].ThrottledRatio)
				}
				if kernel[last] >= kernel[0] {
					t.Errorf("the kernel throttled %.3f at %s, not fewer than %.3f at %s", kernel[last], pts[last], kernel[0], pts[0])
				}
				for name, evs := range map[string][]advise.Evaluation{"slice": slices, "fluid": fluid} {
					if evs[last].ThrottledRatio >= evs[0].ThrottledRatio {
						t.Errorf("the %s replay predicts %.3f at %s, not fewer than %.3f at %s, as the kernel counted", name, evs[last].ThrottledRatio, pts[last], evs[0].ThrottledRatio, pts[0])
					}
				}
				if want == 1 {
					for i := range pts {
						if slices[i].ThrottledRatio != fluid[i].ThrottledRatio {
							t.Errorf("on one CPU at %s the slice replay %.3f differs from the fluid %.3f", pts[i], slices[i].ThrottledRatio, fluid[i].ThrottledRatio)
						}
					}
				}
			})
		}
	}
}

// kneePoints returns, for each of advise.KneeShares, the limit on
// advise.KneeLadder up to d's CPUs where advise predicts the share nearest,
// lowest limit first and each once: the limits the validation harness
// measures programs at (validation.KneeLimits, without the intervals).
func kneePoints(t *testing.T, d *advise.Demand) []advise.Point {
	t.Helper()
	ladder := advise.KneeLadder(d, int64(d.Bound())*1000, 100*time.Millisecond)
	evs, err := advise.Evaluate(d, ladder, advise.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out []advise.Point
	for _, share := range advise.KneeShares() {
		if p := ladder[advise.Nearest(evs, share)]; len(out) == 0 || out[len(out)-1] != p {
			out = append(out, p)
		}
	}
	return out
}

// startWorker starts the test binary exe as a worker running spec, in the
// groups dirs before it runs anything and held to the CPU list cpus, and
// waits until its threads are in; it is killed when the test ends.
func startWorker(t *testing.T, exe string, dirs []string, cpus string, spec workerSpec) {
	t.Helper()
	var join strings.Builder
	for _, d := range dirs {
		fmt.Fprintf(&join, "echo $$ > '%s/cgroup.procs' && ", d)
	}
	cmd := exec.Command("sh", "-c", join.String()+`exec taskset -c "$1" "$0"`, exe, cpus)
	cmd.Env = append(os.Environ(), workerEnv+"="+spec.String())
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	// Its load threads and the runtime's: sampling begins when they run.
	tasks := filepath.Join(dirs[0], "tasks")
	if _, err := os.Stat(tasks); err != nil {
		tasks = filepath.Join(dirs[0], "cgroup.threads")
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(tasks)
		if len(strings.Fields(string(b))) > spec.Threads {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker's %d threads never joined %s (%q)", spec.Threads, dirs[0], b)
		}
	}
}
