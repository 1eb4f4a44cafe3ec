package cgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestParsePerCPU(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []uint64
		err  bool
	}{
		{"154063211185 168217636256 \n", []uint64{154063211185, 168217636256}, false},
		{"0 0 0 7\n", []uint64{0, 0, 0, 7}, false},
		{"\n", nil, true},
		{"12 x\n", nil, true},
	} {
		got, err := ParsePerCPU([]byte(tc.in), nil)
		if (err != nil) != tc.err || (!tc.err && !slices.Equal(got, tc.want)) {
			t.Errorf("ParsePerCPU(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestStatProcessor(t *testing.T) {
	// A command name with spaces and a parenthesis, as the kernel writes it.
	fields := make([]string, 50)
	for i := range fields {
		fields[i] = fmt.Sprint(i + 3)
	}
	fields[36] = "1"
	line := "4242 (my (odd) name) " + strings.Join(fields, " ") + "\n"
	if cpu, err := StatProcessor([]byte(line)); err != nil || cpu != 1 {
		t.Fatalf("StatProcessor = %d, %v; want 1", cpu, err)
	}
	if _, err := StatProcessor([]byte("1 (x) R 1 2")); err == nil {
		t.Fatal("a short stat line parsed")
	}
}

func TestPerCPUReaderV1(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "cpuacct.usage_percpu")
	os.WriteFile(p, []byte("100 200 \n"), 0o644)
	r, err := OpenPerCPU("v1", dir, "/")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.Read(nil)
	if err != nil || !slices.Equal(got, []uint64{100, 200}) {
		t.Fatalf("Read = %v, %v", got, err)
	}
	os.WriteFile(p, []byte("150 900 \n"), 0o644)
	if got, _ = r.Read(got); !slices.Equal(got, []uint64{150, 900}) {
		t.Fatalf("second Read = %v", got)
	}
	if _, err := OpenPerCPU("v1", filepath.Join(dir, "missing"), "/"); err == nil || !strings.Contains(err.Error(), "cpuacct.usage_percpu") {
		t.Fatalf("a missing group: %v", err)
	}
}

// fakeThread writes /proc/TID/{schedstat,stat} under root.
func fakeThread(t *testing.T, root string, tid int, runNs uint64, cpu int) {
	t.Helper()
	d := filepath.Join(root, "proc", fmt.Sprint(tid))
	os.MkdirAll(d, 0o755)
	os.WriteFile(filepath.Join(d, "schedstat"), fmt.Appendf(nil, "%d 0 1\n", runNs), 0o644)
	f := make([]string, 50)
	for i := range f {
		f[i] = "0"
	}
	f[36] = fmt.Sprint(cpu)
	os.WriteFile(filepath.Join(d, "stat"), []byte(fmt.Sprintf("%d (w) %s\n", tid, strings.Join(f, " "))), 0o644)
}

func TestPerCPUReaderV2Threads(t *testing.T) {
	root := t.TempDir()
	g := filepath.Join(root, "grp")
	os.MkdirAll(g, 0o755)
	os.WriteFile(filepath.Join(g, "cgroup.threads"), []byte("10\n11\n"), 0o644)
	fakeThread(t, root, 10, 1000, 0)
	fakeThread(t, root, 11, 5000, 1)
	r, err := OpenPerCPU("v2", g, root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.Read(nil)
	if err != nil || slices.ContainsFunc(got, func(v uint64) bool { return v != 0 }) {
		t.Fatalf("first Read = %v, %v; want zeros", got, err)
	}
	// Thread 10 ran 3 us more on CPU 1; 11 ran 2 us more on CPU 1; a new
	// thread 12 counts from its next reading; 11 exits after.
	fakeThread(t, root, 10, 4000, 1)
	fakeThread(t, root, 11, 7000, 1)
	os.WriteFile(filepath.Join(g, "cgroup.threads"), []byte("10\n11\n12\n"), 0o644)
	fakeThread(t, root, 12, 9000, 0)
	if got, _ = r.Read(got); !slices.Equal(got, []uint64{0, 5000}) {
		t.Fatalf("second Read = %v, want [0 5000]", got)
	}
	os.WriteFile(filepath.Join(g, "cgroup.threads"), []byte("10\n12\n"), 0o644)
	fakeThread(t, root, 12, 9500, 0)
	if got, _ = r.Read(got); !slices.Equal(got, []uint64{500, 5000}) {
		t.Fatalf("third Read = %v, want [500 5000]", got)
	}
}

// TestPerCPUReaderThreadExits: a real process (sleep), listed, read, then
// ended and reaped while the listing stays the same: its kept-open files
// fail (the kernel answers ESRCH for a task that is gone) and it is dropped,
// not counted again.
func TestPerCPUReaderThreadExits(t *testing.T) {
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	g := t.TempDir()
	os.WriteFile(filepath.Join(g, "cgroup.threads"), []byte(fmt.Sprintf("%d\n", cmd.Process.Pid)), 0o644)
	r, err := OpenPerCPU("v2", g, "/")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Read(nil); err != nil || len(r.tasks) != 1 {
		t.Fatalf("first Read: %v, %d threads held", err, len(r.tasks))
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := r.Read(nil); err != nil || len(r.tasks) != 0 {
		t.Fatalf("after the thread exited: %v, %d threads held", err, len(r.tasks))
	}
}

// BenchmarkPerCPUThreads measures the v2 per-thread reader on this
// process's own threads, against one pread of the process's own cgroup's
// cpu.stat in the same run: the ratio is what the per-CPU split costs over
// the plain usage read. The threads are asleep (idle=1: they did not run
// since the last reading, as most of a server's threads within 10 ms), or
// wake every millisecond, and each reading comes 2 ms after the last
// (idle=0: each thread ran, so each one's stat is read).
func BenchmarkPerCPUThreads(b *testing.B) {
	unified := "/sys/fs/cgroup/unified"
	if _, err := os.Stat(filepath.Join(unified, "cgroup.procs")); err != nil {
		unified = "/sys/fs/cgroup"
	}
	lines, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		b.Skip(err)
	}
	var rel string
	for _, l := range strings.Split(string(lines), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			rel = p
		}
	}
	dir := filepath.Join(unified, rel)
	statFile, err := OpenPreadFile(filepath.Join(dir, "cpu.stat"), 1024)
	if err != nil {
		b.Skipf("no v2 cpu.stat for this process: %v", err)
	}
	defer statFile.Close()
	for _, n := range []int{8, 64} {
		for _, idle := range []bool{true, false} {
			// A group of n threads: this process's, listed in a fake
			// cgroup.threads over the real /proc.
			stop := make(chan struct{})
			var wg sync.WaitGroup
			tids := make(chan int, n)
			for range n {
				wg.Go(func() {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					tids <- syscall.Gettid()
					if idle {
						<-stop
						return
					}
					tick := time.NewTicker(time.Millisecond)
					defer tick.Stop()
					for {
						select {
						case <-stop:
							return
						case <-tick.C:
						}
					}
				})
			}
			var list strings.Builder
			for range n {
				fmt.Fprintln(&list, <-tids)
			}
			g := b.TempDir()
			os.WriteFile(filepath.Join(g, "cgroup.threads"), []byte(list.String()), 0o644)
			r, err := OpenPerCPU("v2", g, "/")
			if err != nil {
				b.Fatal(err)
			}
			var dst []uint64
			name := fmt.Sprintf("threads=%d/idle=%d", n, map[bool]int{false: 0, true: 1}[idle])
			b.Run(name+"/usage", func(b *testing.B) {
				for b.Loop() {
					if _, err := statFile.Read(); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(name+"/percpu", func(b *testing.B) {
				for b.Loop() {
					if !idle {
						// Every thread wakes (and runs) before the reading.
						b.StopTimer()
						time.Sleep(2 * time.Millisecond)
						b.StartTimer()
					}
					if dst, err = r.Read(dst); err != nil {
						b.Fatal(err)
					}
				}
			})
			r.Close()
			close(stop)
			wg.Wait()
		}
	}
	b.Run("v1/percpu", func(b *testing.B) {
		r, err := OpenPerCPU("v1", "/sys/fs/cgroup/cpuacct", "/")
		if err != nil {
			b.Skip(err)
		}
		defer r.Close()
		for b.Loop() {
			if dst, err := r.Read(nil); err != nil || len(dst) == 0 {
				b.Fatal(err)
			}
		}
	})
}
