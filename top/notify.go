package top

import (
	"fmt"
	"syscall"
	"unsafe"
)

// dirEvents tells the watcher that groups may have appeared without waiting
// for the next report: an inotify watch on every group's directories (a new
// group is a directory made in one of them, by mkdir on cgroupfs; a rename
// in a fake tree). It is read without blocking at each sample, so nothing
// runs between samples; a node whose inotify cannot be had (no instance or
// watch left) still finds its groups at each report.
type dirEvents struct {
	fd     int
	wds    map[int32]bool // watches held
	failed int            // directories the last Discover could not watch
	err    error          // why the last of them could not be
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
	return &dirEvents{fd: fd, wds: map[int32]bool{}, addWatch: syscall.InotifyAddWatch}, nil
}

// watch watches dir for directories made in it or removed from it (a
// group removed while the gate carries its readings is not read, so no
// read finds it gone: Sample), and reports whether the
// watch is new: a directory made before it was added was not seen, and the
// caller looks again. Watching a directory again is cheap (the kernel
// returns the watch it has; a directory made anew under the same path is
// another one).
func (d *dirEvents) watch(dir string) bool {
	if d == nil || dir == "" {
		return false
	}
	wd, err := d.addWatch(d.fd, dir, syscall.IN_CREATE|syscall.IN_MOVED_TO|syscall.IN_DELETE|syscall.IN_ONLYDIR)
	if err == syscall.ENOSPC {
		d.failed++ // no watch left: what is made in it is found at the report
		d.err = fmt.Errorf("no inotify watch left (%w): raise fs.inotify.max_user_watches", err)
	}
	if err != nil || d.wds[int32(wd)] {
		return false // gone meanwhile, or watched already
	}
	d.wds[int32(wd)] = true
	return true
}

// changed reports whether a directory was made in or removed from a
// watched one since the last call (or events were lost), and forgets the
// watches the kernel dropped with their directories.
func (d *dirEvents) changed() bool {
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
			case ev.Mask&syscall.IN_IGNORED != 0:
				delete(d.wds, ev.Wd)
			case ev.Mask&syscall.IN_ISDIR != 0:
				found = true
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
