package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
)

// PerCPUReader reads how a group's CPU time splits over the CPUs: the
// cumulative CPU time the group ran on each CPU. Sampled beside the usage
// every 10 ms it says how many CPUs the group ran on at once, which decides
// how the kernel's per-CPU runtime slices draw on its quota.
//
// On cgroup v1 the kernel counts it: cpuacct.usage_percpu, one number (ns)
// per possible CPU, one pread per reading. Cgroup v2 has no per-CPU usage
// file; there the reader sums the group's threads (cgroup.threads): each
// thread's run time (/proc/TID/schedstat, ns) since the last reading is put
// on the CPU it last ran on (/proc/TID/stat, field 39). That costs a pread
// of the listing, one of each thread's schedstat and one of the stat of
// each thread that ran, per reading (docs/advise.md measures it); it
// misplaces a thread that moved CPUs within one interval, and threads that
// exit between readings lose their last interval.
type PerCPUReader struct {
	// Path names the file or directory read, for errors.
	Path string
	file CounterFile // v1 cpuacct.usage_percpu
	// v2: cgroup.threads and /proc of root.
	threads CounterFile
	proc    string
	listing []byte  // cgroup.threads as last parsed
	tasks   []*task // its threads, in its order
	sums    []uint64
}

// OpenPerCPU opens the per-CPU reader of a group: on "v1", acctDir is its
// directory in the cpuacct hierarchy; on "v2", its directory in the unified
// hierarchy, and procRoot is where /proc is (the host's root, "/").
func OpenPerCPU(version, acctDir, procRoot string) (*PerCPUReader, error) {
	switch version {
	case "v1":
		p := filepath.Join(acctDir, "cpuacct.usage_percpu")
		f, err := OpenCounterFile(p, 64*1024)
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", p, err)
		}
		return &PerCPUReader{Path: p, file: f}, nil
	case "v2":
		p := filepath.Join(acctDir, "cgroup.threads")
		f, err := OpenCounterFile(p, 1<<20)
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", p, err)
		}
		return &PerCPUReader{Path: p, threads: f, proc: filepath.Join(procRoot, "proc")}, nil
	}
	return nil, fmt.Errorf("cgroup version %q: want v1 or v2", version)
}

// Read appends the cumulative CPU time (ns) on each CPU to dst[:0] and
// returns it. On v1 it is the kernel's count; on v2 the sum of the group's
// threads' run time since the reader was opened (the first reading is all
// zeros), indexed by CPU number.
func (r *PerCPUReader) Read(dst []uint64) ([]uint64, error) {
	if r.file != nil {
		b, err := r.file.Read()
		if err != nil {
			return dst[:0], fmt.Errorf("reading %s: %w", r.Path, err)
		}
		dst, err = ParsePerCPU(b, dst[:0])
		if err != nil {
			return dst, fmt.Errorf("%s: %w", r.Path, err)
		}
		return dst, nil
	}
	return r.readThreads(dst)
}

// Threads is how many threads the last Read summed on v2 (each costs a
// pread or two per reading); 0 on v1, where the kernel counts per CPU.
func (r *PerCPUReader) Threads() int { return len(r.tasks) }

// ParsePerCPU parses cpuacct.usage_percpu ("123 456 \n") into dst.
func ParsePerCPU(b []byte, dst []uint64) ([]uint64, error) {
	for len(b) > 0 {
		b = bytes.TrimLeft(b, " \t\n")
		if len(b) == 0 {
			break
		}
		v, err := ParseUintPrefix(b)
		if err != nil {
			return dst, err
		}
		dst = append(dst, v)
		i := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		b = b[i:]
	}
	if len(dst) == 0 {
		return dst, errors.New("no per-CPU counts")
	}
	return dst, nil
}

// readThreads is Read on v2: the threads' run time since the last reading
// added to the CPU each last ran on. The listing is read every time (one
// pread) but parsed, and the threads' files opened, only when it changed;
// each thread's files stay open and are read with pread, and a thread's
// stat (for its CPU) only when it ran since the last reading.
func (r *PerCPUReader) readThreads(dst []uint64) ([]uint64, error) {
	b, err := r.threads.Read()
	if err != nil {
		return dst[:0], fmt.Errorf("reading %s: %w", r.Path, err)
	}
	if !bytes.Equal(b, r.listing) {
		if err := r.relist(b); err != nil {
			return dst[:0], err
		}
	}
	for i := 0; i < len(r.tasks); i++ {
		t := r.tasks[i]
		run, cpu, err := t.read()
		if err != nil {
			// Exited since the listing: drop it, and list again next time
			// (its number may come back as another thread).
			t.close()
			r.tasks = slices.Delete(r.tasks, i, i+1)
			i--
			r.listing = r.listing[:0]
			continue
		}
		if t.seen && run > t.runNs {
			for len(r.sums) <= cpu {
				r.sums = append(r.sums, 0)
			}
			r.sums[cpu] += run - t.runNs
		}
		t.runNs, t.seen = run, true
	}
	return append(dst[:0], r.sums...), nil
}

// relist takes a new listing of the group's threads: threads kept keep
// their files and last reading, new ones are opened (a thread that exited
// before it could be opened is left out), gone ones closed.
func (r *PerCPUReader) relist(b []byte) error {
	r.listing = append(r.listing[:0], b...)
	old := r.tasks
	r.tasks = nil
	byTID := make(map[int]*task, len(old))
	for _, t := range old {
		byTID[t.tid] = t
	}
	for len(b) > 0 {
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 {
			nl = len(b)
		}
		line := b[:nl]
		b = b[min(nl+1, len(b)):]
		if len(line) == 0 {
			continue
		}
		tid, err := strconv.Atoi(string(line))
		if err != nil {
			for _, t := range byTID {
				t.close()
			}
			closeTasks(r.tasks)
			r.tasks, r.listing = nil, r.listing[:0]
			return fmt.Errorf("%s: thread %q: %w", r.Path, line, err)
		}
		if t, ok := byTID[tid]; ok {
			delete(byTID, tid)
			r.tasks = append(r.tasks, t)
			continue
		}
		t, err := openTask(r.proc, tid)
		if err != nil {
			continue // exited since the listing
		}
		r.tasks = append(r.tasks, t)
	}
	for _, t := range byTID {
		t.close()
	}
	return nil
}

// task is one thread's files, kept open, and its run time at the last
// reading.
type task struct {
	tid             int
	schedstat, stat *PreadFile
	runNs           uint64
	seen            bool // runNs holds a reading
}

func openTask(proc string, tid int) (*task, error) {
	dir := filepath.Join(proc, strconv.Itoa(tid))
	ss, err := OpenPreadFile(filepath.Join(dir, "schedstat"), 128)
	if err != nil {
		return nil, err
	}
	st, err := OpenPreadFile(filepath.Join(dir, "stat"), 1024)
	if err != nil {
		ss.Close()
		return nil, err
	}
	return &task{tid: tid, schedstat: ss, stat: st}, nil
}

// read reads the thread's run time (ns) and, when it ran since the last
// reading, the CPU it last ran on (else cpu is -1). A thread that exited
// fails (ESRCH).
func (t *task) read() (runNs uint64, cpu int, err error) {
	ss, err := t.schedstat.Read()
	if err != nil {
		return 0, 0, err
	}
	if runNs, err = ParseUintPrefix(ss); err != nil {
		return 0, 0, err
	}
	if t.seen && runNs <= t.runNs {
		return runNs, -1, nil
	}
	st, err := t.stat.Read()
	if err != nil {
		return 0, 0, err
	}
	cpu, err = StatProcessor(st)
	return runNs, cpu, err
}

func (t *task) close() {
	t.schedstat.Close()
	t.stat.Close()
}

func closeTasks(ts []*task) {
	for _, t := range ts {
		t.close()
	}
}

// StatProcessor returns the CPU a task last ran on from /proc/PID/stat
// (field 39, counted after the command name, which may hold spaces and
// parentheses).
func StatProcessor(b []byte) (int, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("stat: no command name")
	}
	f := bytes.Fields(b[i+1:])
	// Fields after the name start at field 3 (state); processor is 39.
	if len(f) < 37 {
		return 0, fmt.Errorf("stat: %d fields after the name, want 37 or more", len(f))
	}
	return strconv.Atoi(string(f[36]))
}

// Close closes the reader's files.
func (r *PerCPUReader) Close() error {
	var errs []error
	if r.file != nil {
		errs = append(errs, r.file.Close())
		r.file = nil
	}
	if r.threads != nil {
		errs = append(errs, r.threads.Close())
		r.threads = nil
	}
	closeTasks(r.tasks)
	r.tasks = nil
	return errors.Join(errs...)
}
