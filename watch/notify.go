package watch

import (
	"bytes"
	"fmt"
	"syscall"
	"unsafe"
)

// dirEvents tells the watcher that groups may have appeared without waiting
// for the next report: an inotify watch on every group's directories (a new
// group is a directory made in one of them, by mkdir on cgroupfs; a rename
// in a fake tree); and, on the directories watched for settings, that a
// group's CPU settings were written (a write to cgroupfs is a modification
// of the file like any other: the kubelet's in-place resize, a runtime's
// update). It is read without blocking at each sample, so nothing runs
// between samples; a node whose inotify cannot be had (no instance or
// watch left) still finds its groups, and their settings, at each report.
type dirEvents struct {
	fd     int
	wds    map[int32]string // watches held: their directories
	failed int              // directories the last Discover could not watch
	err    error            // why the last of them could not be
	buf    [4096]byte
	// addWatch is syscall.InotifyAddWatch (tests run out of watches).
	addWatch func(fd int, dir string, mask uint32) (int, error)
}

func newDirEvents() (*dirEvents, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		if err == syscall.EMFILE {
			return nil, fmt.Errorf("no inotify instance left (%w): raise fs.inotify.max_user_instances", err)
		}
		return nil, fmt.Errorf("inotify: %w", err)
	}
	return &dirEvents{fd: fd, wds: map[int32]string{}, addWatch: syscall.InotifyAddWatch}, nil
}

// watch watches dir for directories made in it or removed from it (a
// group removed while the gate carries its readings is not read, so no
// read finds it gone: Sample), and reports whether the
// watch is new: a directory made before it was added was not seen, and the
// caller looks again. Watching a directory again is cheap (the kernel
// returns the watch it has; a directory made anew under the same path is
// another one).
// With settings, writes to its CPU settings files are watched too
// (changed).
func (d *dirEvents) watch(dir string, settings bool) bool {
	if d == nil || dir == "" {
		return false
	}
	mask := uint32(syscall.IN_CREATE | syscall.IN_MOVED_TO | syscall.IN_DELETE | syscall.IN_ONLYDIR)
	if settings {
		mask |= syscall.IN_MODIFY
	}
	wd, err := d.addWatch(d.fd, dir, mask)
	if err == syscall.ENOSPC {
		d.failed++ // no watch left: what is made in it is found at the report
		d.err = fmt.Errorf("no inotify watch left (%w): raise fs.inotify.max_user_watches", err)
	}
	if _, held := d.wds[int32(wd)]; err != nil || held {
		return false // gone meanwhile, or watched already
	}
	d.wds[int32(wd)] = dir
	return true
}

// settingsFiles are the CPU settings files whose writes changed passes on.
var settingsFiles = map[string]bool{"cpu.cfs_quota_us": true, "cpu.cfs_period_us": true, "cpu.cfs_burst_us": true,
	"cpu.max": true, "cpu.max.burst": true, "cpu.shares": true, "cpu.weight": true}

// changed reports whether a directory was made in or removed from a
// watched one since the last call (or events were lost), and forgets the
// watches the kernel dropped with their directories. written, if not nil,
// gets the directory of each CPU settings file written since the last
// call (watch with settings), and "" when events were lost (any group's
// may have been).
func (d *dirEvents) changed(written func(dir string)) bool {
	if d == nil {
		return false
	}
	found := false
	for {
		n, err := syscall.Read(d.fd, d.buf[:])
		if err != nil || n < syscall.SizeofInotifyEvent {
			return found // EAGAIN: nothing more
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&d.buf[off]))
			switch {
			case ev.Mask&syscall.IN_Q_OVERFLOW != 0:
				found = true
				if written != nil {
					written("")
				}
			case ev.Mask&syscall.IN_IGNORED != 0:
				delete(d.wds, ev.Wd)
			case ev.Mask&syscall.IN_ISDIR != 0:
				found = true
			case ev.Mask&syscall.IN_MODIFY != 0 && written != nil:
				name := d.buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
				if i := bytes.IndexByte(name, 0); i >= 0 {
					name = name[:i]
				}
				if settingsFiles[string(name)] {
					written(d.wds[ev.Wd])
				}
			}
			off += syscall.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

func (d *dirEvents) close() {
	if d != nil {
		syscall.Close(d.fd)
	}
}
