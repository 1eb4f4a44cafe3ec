package vmtest

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
)

// Archive is the content of an initramfs: a newc cpio archive, written by
// WriteTo (gzip-compressed), so the host needs no cpio tool.
type Archive struct {
	entries map[string]entry
}

type entry struct {
	mode       uint32 // file type and permissions, as in stat's st_mode
	data       []byte // a file's bytes or a symlink's target
	src        string // or a host file whose bytes are the file's
	rdevMajor  uint32
	rdevMinor  uint32
	sizeFromFS int64
}

const (
	modeDir  = 0o040000
	modeFile = 0o100000
	modeLink = 0o120000
	modeChar = 0o020000
)

func (a *Archive) add(name string, e entry) {
	if a.entries == nil {
		a.entries = map[string]entry{}
	}
	name = strings.TrimPrefix(path.Clean("/"+name), "/")
	for d := path.Dir(name); d != "." && d != "/"; d = path.Dir(d) {
		if _, ok := a.entries[d]; !ok {
			a.entries[d] = entry{mode: modeDir | 0o755}
		}
	}
	a.entries[name] = e
}

// Dir adds a directory (and its parents).
func (a *Archive) Dir(name string) { a.add(name, entry{mode: modeDir | 0o755}) }

// File adds a file with the given bytes and permissions.
func (a *Archive) File(name string, data []byte, perm uint32) {
	a.add(name, entry{mode: modeFile | perm&0o7777, data: data})
}

// HostFile adds a copy of the host's file src, read when the archive is
// written; it keeps src's permission bits.
func (a *Archive) HostFile(name, src string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", src)
	}
	a.add(name, entry{mode: modeFile | uint32(fi.Mode().Perm()), src: src, sizeFromFS: fi.Size()})
	return nil
}

// HostTree adds a copy of the host's directory tree src under name: its
// directories and regular files (symlinks and other files are skipped).
func (a *Archive) HostTree(name, src string) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	a.Dir(name)
	for _, e := range ents {
		s, n := src+"/"+e.Name(), name+"/"+e.Name()
		switch {
		case e.IsDir():
			if err := a.HostTree(n, s); err != nil {
				return err
			}
		case e.Type().IsRegular():
			if err := a.HostFile(n, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// Symlink adds a symbolic link to target.
func (a *Archive) Symlink(name, target string) {
	a.add(name, entry{mode: modeLink | 0o777, data: []byte(target)})
}

// CharDev adds a character device node.
func (a *Archive) CharDev(name string, major, minor uint32) {
	a.add(name, entry{mode: modeChar | 0o600, rdevMajor: major, rdevMinor: minor})
}

// WriteTo writes the archive as a gzip-compressed newc cpio, directories
// before what they hold, names in a fixed order (the same archive gives the
// same bytes).
func (a *Archive) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	z, err := gzip.NewWriterLevel(cw, gzip.BestSpeed)
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(z, 1<<20)
	names := make([]string, 0, len(a.entries))
	for n := range a.entries {
		names = append(names, n)
	}
	sort.Strings(names) // a parent sorts before its children
	for i, n := range names {
		if err := writeEntry(bw, uint32(i+1), n, a.entries[n]); err != nil {
			return cw.n, err
		}
	}
	if err := writeHeader(bw, 0, "TRAILER!!!", entry{}, 0); err != nil {
		return cw.n, err
	}
	if err := bw.Flush(); err != nil {
		return cw.n, err
	}
	err = z.Close()
	return cw.n, err
}

func writeEntry(w *bufio.Writer, ino uint32, name string, e entry) error {
	size := int64(len(e.data))
	if e.src != "" {
		size = e.sizeFromFS
	}
	if err := writeHeader(w, ino, name, e, size); err != nil {
		return err
	}
	if e.src != "" {
		f, err := os.Open(e.src)
		if err != nil {
			return err
		}
		n, err := io.Copy(w, f)
		f.Close()
		if err != nil {
			return err
		}
		if n != size {
			return fmt.Errorf("%s changed size while archived (%d bytes, then %d)", e.src, size, n)
		}
	} else if _, err := w.Write(e.data); err != nil {
		return err
	}
	return pad(w, size)
}

func writeHeader(w *bufio.Writer, ino uint32, name string, e entry, size int64) error {
	nlink := uint32(1)
	if e.mode&0o170000 == modeDir {
		nlink = 2
	}
	_, err := fmt.Fprintf(w, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%s\x00",
		ino, e.mode, 0, 0, nlink, 0, uint32(size), 0, 0, e.rdevMajor, e.rdevMinor, len(name)+1, 0, name)
	if err != nil {
		return err
	}
	return pad(w, int64(110+len(name)+1))
}

func pad(w *bufio.Writer, n int64) error {
	if r := n % 4; r != 0 {
		_, err := w.Write(make([]byte, 4-r))
		return err
	}
	return nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
