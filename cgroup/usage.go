package cgroup

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// CounterFile is a counter file kept open and read again from its start
// (*PreadFile); tests wrap one to fail reads the way the kernel does.
type CounterFile interface {
	Read() ([]byte, error)
	Close() error
}

// ErrNoUsage marks a group whose CPU usage no file counts: a cgroup v1
// group outside the cpuacct hierarchy, or a v2 cpu.stat without usage_usec.
var ErrNoUsage = errors.New("no CPU usage")

// UsageCounter reads one group's cumulative CPU usage and the counters of its
// cpu.stat, wherever the host keeps them: this is the one place that picks
// the file. On cgroup v2 both are in the group's cpu.stat (usage_usec); on
// v1 usage is cpuacct.usage (ns) in the cpuacct hierarchy, which may be
// mounted apart from cpu, and the bandwidth counters are in the cpu
// hierarchy's cpu.stat. Its files stay open (one pread each per reading, no
// allocation), cheap enough to read dozens of groups every 10 ms. Not safe
// for concurrent use.
type UsageCounter struct {
	// Stat is cpu.stat (nil for a v1 group found only in cpuacct); Usage is
	// v1 cpuacct.usage (nil on v2, and for a v1 group outside cpuacct).
	Stat, Usage CounterFile
	// StatPath and UsagePath name them in errors.
	StatPath, UsagePath string
	version             string
}

// UsageReading is one reading of a UsageCounter.
type UsageReading struct {
	// CPUCounters are cpu.stat's (zero when it was not read).
	CPUCounters
	// UsageNs is the cumulative CPU time, when HasUsageNs.
	UsageNs    uint64
	HasUsageNs bool
}

// OpenFunc opens a counter file for repeated reading (OpenCounterFile;
// tests put a failing one in its place).
type OpenFunc func(path string, size int) (CounterFile, error)

// OpenCounterFile is OpenPreadFile as an OpenFunc.
func OpenCounterFile(path string, size int) (CounterFile, error) {
	f, err := OpenPreadFile(path, size)
	if err != nil {
		return nil, err // not a non-nil interface holding a nil file
	}
	return f, nil
}

// OpenUsage opens the counters of the group whose directories are cpuDir (in
// the cpu controller's hierarchy) and acctDir (where usage is counted: the
// cpuacct hierarchy on v1, the group itself on v2), for a hierarchy of
// version "v1" or "v2". A group without a usage counter is refused with
// ErrNoUsage.
func OpenUsage(version, cpuDir, acctDir string) (*UsageCounter, error) {
	u, err := OpenCounters(version, cpuDir, acctDir, OpenCounterFile)
	if err != nil {
		return nil, err
	}
	if !u.CountsUsage() {
		u.Close()
		return nil, fmt.Errorf("%w: the cpuacct controller is not mounted or the group is not in it (cgroup v1)", ErrNoUsage)
	}
	return u, nil
}

// OpenCounters is OpenUsage for a watcher that shows whatever a group has:
// either directory may be "" (on v2 without the cpu controller, cpu.stat is
// read in acctDir and counts usage only), and a group without a usage
// counter is opened all the same. open opens each file.
func OpenCounters(version, cpuDir, acctDir string, open OpenFunc) (*UsageCounter, error) {
	if version != "v1" && version != "v2" {
		return nil, fmt.Errorf("cgroup version %q: want v1 or v2", version)
	}
	u := &UsageCounter{version: version}
	statDir := cpuDir
	if version == "v2" && statDir == "" {
		statDir = acctDir
	}
	var err error
	if statDir != "" {
		u.StatPath = filepath.Join(statDir, "cpu.stat")
		if u.Stat, err = open(u.StatPath, 1024); err != nil {
			return nil, err
		}
	}
	if version == "v1" && acctDir != "" {
		u.UsagePath = filepath.Join(acctDir, "cpuacct.usage")
		if u.Usage, err = open(u.UsagePath, 32); err != nil {
			u.Close()
			return nil, err
		}
	}
	return u, nil
}

// CountsUsage reports whether a file counts the group's usage.
func (u *UsageCounter) CountsUsage() bool {
	if u.version == "v1" {
		return u.Usage != nil
	}
	return u.Stat != nil
}

// Read reads the usage and, with stat (or where usage is in cpu.stat),
// cpu.stat: one pread on v2, two on v1 with stat. Errors name the file.
func (u *UsageCounter) Read(stat bool) (UsageReading, error) {
	var r UsageReading
	if u.Usage != nil {
		b, err := u.Usage.Read()
		if err != nil {
			return r, fmt.Errorf("reading %s: %w", u.UsagePath, err)
		}
		if r.UsageNs, err = ParseUintPrefix(b); err != nil {
			return r, fmt.Errorf("%s: %w", u.UsagePath, err)
		}
		r.HasUsageNs = true
	}
	if u.Stat == nil || (u.Usage != nil && !stat) {
		return r, nil
	}
	var err error
	if r.CPUCounters, err = u.ReadStat(); err != nil {
		return r, err
	}
	if u.Usage == nil && r.HasUsage {
		r.UsageNs, r.HasUsageNs = r.UsageUsec*1000, true
	}
	return r, nil
}

// ReadStat reads cpu.stat alone (a v1 group's, whose usage is in
// cpuacct.usage; nil Stat gives zero counters).
func (u *UsageCounter) ReadStat() (CPUCounters, error) {
	if u.Stat == nil {
		return CPUCounters{}, nil
	}
	b, err := u.Stat.Read()
	if err != nil {
		return CPUCounters{}, fmt.Errorf("reading %s: %w", u.StatPath, err)
	}
	c, err := ParseCPUCounters(b)
	if err != nil {
		return c, fmt.Errorf("%s: %w", u.StatPath, err)
	}
	return c, nil
}

// ReadUsage reads the usage alone (with cpu.stat where usage is in it), and
// fails with ErrNoUsage where no file counts it.
func (u *UsageCounter) ReadUsage(stat bool) (UsageReading, error) {
	r, err := u.Read(stat)
	if err == nil && !r.HasUsageNs {
		if u.version == "v2" && u.Stat != nil {
			err = fmt.Errorf("%w: %s has no usage_usec", ErrNoUsage, u.StatPath)
		} else {
			err = fmt.Errorf("%w: the group is not in the cpuacct hierarchy (cgroup v1)", ErrNoUsage)
		}
	}
	return r, err
}

// Usage is the reading's usage as a duration.
func (r UsageReading) Usage() time.Duration { return time.Duration(r.UsageNs) }

// Close closes the counter's files.
func (u *UsageCounter) Close() error {
	var errs []error
	if u.Stat != nil {
		errs = append(errs, u.Stat.Close())
		u.Stat = nil
	}
	if u.Usage != nil {
		errs = append(errs, u.Usage.Close())
		u.Usage = nil
	}
	return errors.Join(errs...)
}
