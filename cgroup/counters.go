package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"
)

// PreadFile is a kernel counter file kept open and read again from offset 0
// (pread) each time: one system call and no allocation per reading, where
// opening the file anew would cost an open, a read and a close. The runner's
// sampler and throttlelab top read cpu.stat and cpuacct.usage this way. (Not
// os.File.ReadAt: it reads on until the buffer is full, a second pread that
// finds the end, and cgroupfs makes the file's content anew for it:
// docs/performance.md has what that costs.)
type PreadFile struct {
	f   *os.File
	fd  int
	buf []byte
}

// OpenPreadFile opens a counter file for repeated reading; size is the
// largest content expected (cpu.stat is a few hundred bytes).
func OpenPreadFile(path string, size int) (*PreadFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &PreadFile{f: f, fd: int(f.Fd()), buf: make([]byte, size)}, nil
}

// Read returns the file's current content. The slice is valid until the next
// Read. A cgroup removed since the file was opened fails with ENODEV.
func (p *PreadFile) Read() ([]byte, error) {
	n, err := syscall.Pread(p.fd, p.buf, 0)
	for err == syscall.EINTR {
		n, err = syscall.Pread(p.fd, p.buf, 0)
	}
	runtime.KeepAlive(p.f) // the descriptor stays open while it is read
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: p.f.Name(), Err: err}
	}
	if n == 0 {
		return nil, io.EOF
	}
	return p.buf[:n], nil
}

// Close closes the file.
func (p *PreadFile) Close() error { return p.f.Close() }

// CPUCounters are the cumulative counters of a cpu.stat file, both versions
// in common units. Usage, user and system time are only in a v2 cpu.stat (v1
// keeps usage in cpuacct.usage); the bandwidth counters only where the cpu
// controller is enabled for the group.
type CPUCounters struct {
	UsageUsec, UserUsec, SystemUsec uint64
	// HasUsage reports whether the file had a usage_usec line (v2).
	HasUsage bool
	CPUStat
}

// ParseCPUCounters parses a cpu.stat of either version (v1 counts time in ns,
// v2 in us) without allocating, as it runs every 10 ms for every group
// sampled. Unknown lines are skipped: kernels add new ones.
func ParseCPUCounters(b []byte) (CPUCounters, error) {
	var c CPUCounters
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		sp := bytes.IndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		key, val := line[:sp], line[sp+1:]
		var dst *uint64
		scale := uint64(1)
		switch string(key) { // no allocation: the compiler compares in place
		case "usage_usec":
			dst, c.HasUsage = &c.UsageUsec, true
		case "user_usec":
			dst = &c.UserUsec
		case "system_usec":
			dst = &c.SystemUsec
		case "nr_periods":
			dst = &c.Periods
		case "nr_throttled":
			dst = &c.ThrottledPeriods
		case "throttled_usec":
			dst = &c.ThrottledUsec
		case "throttled_time":
			dst, scale = &c.ThrottledUsec, 1000
		case "nr_bursts":
			dst = &c.Bursts
		case "burst_usec":
			dst = &c.BurstUsec
		case "burst_time":
			dst, scale = &c.BurstUsec, 1000
		default:
			continue
		}
		v, err := ParseUintPrefix(val)
		if err != nil {
			return c, fmt.Errorf("cpu.stat %s: %w", key, err)
		}
		*dst = v / scale
	}
	return c, nil
}

// ParseUintPrefix parses the decimal number at the start of b (a counter file
// such as cpuacct.usage, with its newline), without allocating.
func ParseUintPrefix(b []byte) (uint64, error) {
	var v uint64
	i := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		v = v*10 + uint64(b[i]-'0')
	}
	if i == 0 {
		return 0, fmt.Errorf("not a number: %q", b)
	}
	return v, nil
}

// ReadGroupCPU reads the CPU settings of one group directory in the hierarchy
// that holds the cpu controller (version "v1" or "v2"): quota, period, burst,
// and shares or weight. LimitCores is the group's own quota per period (0
// without a quota), not its ancestors'. The v2 root group, which has no
// cpu.max, reads as unlimited.
func ReadGroupCPU(dir, version string) (*CPULimits, error) {
	out := &CPULimits{CPUVersion: version, Group: dir, QuotaUsec: -1}
	var err error
	switch version {
	case "v1":
		err = readV1CPU(dir, out)
	case "v2":
		err = readV2CPU(dir, out)
	default:
		return nil, errors.New("no cgroup hierarchy has the cpu controller")
	}
	if err != nil {
		return nil, err
	}
	if out.QuotaUsec > 0 && out.PeriodUsec > 0 {
		out.LimitCores = float64(out.QuotaUsec) / float64(out.PeriodUsec)
	}
	return out, nil
}
