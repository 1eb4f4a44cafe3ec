package vmtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Matrix is a set of cells, kernel x layout, each running the same suites.
type Matrix struct {
	Kernels []Kernel
	Layouts []Layout
	Suites  []Suite
	// Root is the module's root directory (the packages are built from it).
	Root string
	// CacheDir holds the unpacked kernels (DefaultCacheDir).
	CacheDir string
	// Busybox is a statically linked busybox (/bin/busybox from Debian's
	// busybox-static).
	Busybox string
	// Accel, CPUs and MemoryMB are the guest's (see Boot).
	Accel          string
	CPUs, MemoryMB int
	// Log receives progress lines (one per build step and cell).
	Log io.Writer
}

// SuiteResult is one package's outcome in one cell.
type SuiteResult struct {
	Pkg string
	// Ran is whether the guest started the package's tests; Passed whether
	// its test binary exited 0 having run at least one test.
	Ran, Passed bool
	// Pass, Skip and Fail count the top-level tests by their outcome.
	Pass, Skip, Fail int
	// Took is the host's wall time from the package's start to its end.
	Took time.Duration
	// Output is everything the package's test binary printed.
	Output []string
}

// Cell is the outcome of one kernel x layout.
type Cell struct {
	Kernel Kernel
	Layout Layout
	// Accel is the qemu accelerator the cell ran under: "tcg" or "kvm".
	Accel string
	// Release is the guest's uname -r.
	Release string
	Suites  []SuiteResult
	// Took is the host's wall time of the whole boot.
	Took time.Duration
	// Err says why the cell did not finish (a timeout, qemu failing, an
	// interruption); the suites that did not finish are not Passed.
	Err error
	// Console is the guest's console outside the packages' output, for a
	// cell that did not finish.
	Console []string
}

// Passed is whether every suite of the cell passed.
func (c Cell) Passed() bool {
	if c.Err != nil {
		return false
	}
	for _, s := range c.Suites {
		if !s.Passed {
			return false
		}
	}
	return true
}

// Prepare builds the test binaries and the throttlelab binary (static), and
// writes the initramfs holding them, busybox, the init script and the data
// the tests read into dir. It returns the initramfs's path.
func (m *Matrix) Prepare(ctx context.Context, dir string) (string, error) {
	var a Archive
	if err := a.HostFile("bin/busybox", m.Busybox); err != nil {
		return "", err
	}
	for _, d := range []string{"proc", "sys", "dev", "tmp", "sys/fs/cgroup"} {
		a.Dir(d)
	}
	a.CharDev("dev/console", 5, 1)
	a.CharDev("dev/null", 1, 3)
	a.File("etc/hosts", []byte("127.0.0.1 localhost\n::1 localhost\n"), 0o644)
	a.File("etc/passwd", []byte("root:x:0:0:root:/tmp:/bin/sh\n"), 0o644)
	a.File("etc/group", []byte("root:x:0:\n"), 0o644)
	src, err := filepath.Abs(m.Root)
	if err != nil {
		return "", err
	}
	script, err := InitScript(m.Layouts, m.Suites, src)
	if err != nil {
		return "", err
	}
	a.File("init", []byte(script), 0o755)

	tests := filepath.Join(dir, "tests")
	if err := os.MkdirAll(tests, 0o755); err != nil {
		return "", err
	}
	args := []string{"test", "-c", "-ldflags=-s -w", "-o", tests + "/"}
	seen := map[string]string{}
	binary := false
	for _, s := range m.Suites {
		if other, ok := seen[s.binName()]; ok {
			return "", fmt.Errorf("packages %s and %s both build %s: the guest needs distinct names", other, s.Pkg, s.binName())
		}
		seen[s.binName()] = s.Pkg
		args = append(args, "./"+s.Pkg)
		binary = binary || s.Binary
	}
	start := time.Now()
	if err := m.goTool(ctx, args...); err != nil {
		return "", err
	}
	if binary {
		if err := m.goTool(ctx, "build", "-ldflags=-s -w", "-o", filepath.Join(dir, "throttlelab"), "./cmd/throttlelab"); err != nil {
			return "", err
		}
		if err := a.HostFile("bin/throttlelab", filepath.Join(dir, "throttlelab")); err != nil {
			return "", err
		}
	}
	fmt.Fprintf(m.Log, "vmtest: built %d static test binaries in %.1f s\n", len(m.Suites), time.Since(start).Seconds())
	for _, s := range m.Suites {
		bin := filepath.Join(tests, s.binName())
		if dyn, err := isDynamicELF(bin); err != nil || dyn {
			return "", fmt.Errorf("%s: not a static binary (%v)", bin, err)
		}
		if err := a.HostFile("tests/"+s.binName(), bin); err != nil {
			return "", err
		}
		a.Dir(src + "/" + s.Pkg)
		data := s.Data
		if _, err := os.Stat(filepath.Join(src, s.Pkg, "testdata")); err == nil {
			data = append([]string{s.Pkg + "/testdata"}, data...)
		}
		for _, d := range data {
			if err := a.HostTree(src+"/"+d, filepath.Join(src, d)); err != nil {
				return "", err
			}
		}
	}
	initrd := filepath.Join(dir, "initrd.gz")
	f, err := os.Create(initrd)
	if err != nil {
		return "", err
	}
	n, err := a.WriteTo(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", initrd, err)
	}
	fmt.Fprintf(m.Log, "vmtest: initramfs %s, %.1f MB\n", initrd, float64(n)/1e6)
	return initrd, nil
}

func (m *Matrix) goTool(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = m.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// Run boots every cell, kernels in order and each kernel's layouts in order,
// one after the other, and returns their outcomes. It stops early, with the
// cells so far, only when ctx ends.
func (m *Matrix) Run(ctx context.Context, initrd string) ([]Cell, error) {
	var cells []Cell
	for _, k := range m.Kernels {
		vmlinuz, err := Fetch(ctx, m.CacheDir, k)
		if err != nil {
			return cells, err
		}
		for _, l := range m.Layouts {
			if ctx.Err() != nil {
				return cells, ctx.Err()
			}
			c := m.runCell(ctx, k, l, vmlinuz, initrd)
			state := "ok"
			if !c.Passed() {
				state = "FAIL"
				for _, s := range c.Suites {
					if !s.Passed {
						state += " " + s.Pkg
					}
				}
				if c.Err != nil {
					state += " (" + c.Err.Error() + ")"
				}
			}
			fmt.Fprintf(m.Log, "vmtest: %s %s %s in %.0f s\n", k.Series, l.Name, state, c.Took.Seconds())
			cells = append(cells, c)
		}
	}
	return cells, ctx.Err()
}

func (m *Matrix) runCell(ctx context.Context, k Kernel, l Layout, vmlinuz, initrd string) Cell {
	timeout := 2 * time.Minute // boot, unpacking, power-off
	for _, s := range m.Suites {
		timeout += s.Timeout
	}
	b := Boot{Kernel: vmlinuz, Initrd: initrd, CPUs: m.CPUs, MemoryMB: m.MemoryMB, Accel: m.Accel, Timeout: timeout}
	p := newConsoleParser(k, l)
	start := time.Now()
	cmdline := "vmtest.layout=" + l.Name
	if m.Accel == "tcg" {
		cmdline += " vmtest.emulated=1"
	}
	err := b.RunWith(ctx, cmdline, p.line)
	c := p.cell()
	c.Took = time.Since(start)
	c.Accel = m.Accel
	if err == nil && !p.done {
		err = errors.New("the guest stopped before its tests ended")
	}
	// A package that never began (its directory missing in the guest, say)
	// must not pass by saying nothing.
	if missing := neverBegan(m.Suites, c.Suites); err == nil && len(missing) > 0 {
		err = fmt.Errorf("packages that never began in the guest: %s", strings.Join(missing, ", "))
	}
	c.Err = err
	return c
}

// consoleParser follows the guest's markers and collects each suite's
// output and counts.
type consoleParser struct {
	c       Cell
	cur     *SuiteResult
	started time.Time
	done    bool
	now     func() time.Time
}

func newConsoleParser(k Kernel, l Layout) *consoleParser {
	return &consoleParser{c: Cell{Kernel: k, Layout: l}, now: time.Now}
}

func (p *consoleParser) line(s string) {
	if rest, ok := strings.CutPrefix(s, marker+" "); ok {
		f := strings.Fields(rest)
		switch {
		case len(f) >= 2 && f[0] == "start":
			p.c.Release = f[1]
		case len(f) == 2 && f[0] == "begin":
			p.c.Suites = append(p.c.Suites, SuiteResult{Pkg: f[1], Ran: true})
			p.cur = &p.c.Suites[len(p.c.Suites)-1]
			p.started = p.now()
		case len(f) == 3 && f[0] == "end" && p.cur != nil && f[1] == p.cur.Pkg:
			rc, err := strconv.Atoi(strings.TrimPrefix(f[2], "rc="))
			// A suite that ran no test did not pass: its pattern matches
			// nothing (the tests moved to another package, say).
			p.cur.Passed = err == nil && rc == 0 && p.cur.Fail == 0 && p.cur.Pass+p.cur.Skip > 0
			p.cur.Took = p.now().Sub(p.started)
			p.cur = nil
		case len(f) == 1 && f[0] == "done":
			p.done = true
		default:
			p.c.Console = append(p.c.Console, s)
		}
		return
	}
	if p.cur == nil {
		p.c.Console = append(p.c.Console, s)
		return
	}
	p.cur.Output = append(p.cur.Output, s)
	switch {
	case strings.HasPrefix(s, "--- PASS: "):
		p.cur.Pass++
	case strings.HasPrefix(s, "--- SKIP: "):
		p.cur.Skip++
	case strings.HasPrefix(s, "--- FAIL: "):
		p.cur.Fail++
	}
}

// cell returns the outcome so far; a suite still running counts as not
// passed.
func (p *consoleParser) cell() Cell {
	if p.cur != nil {
		p.cur.Took = p.now().Sub(p.started)
	}
	return p.c
}

// neverBegan lists the packages of suites that have no result in got.
func neverBegan(suites []Suite, got []SuiteResult) []string {
	var missing []string
	for _, s := range suites {
		if !slices.ContainsFunc(got, func(r SuiteResult) bool { return r.Pkg == s.Pkg }) {
			missing = append(missing, s.Pkg)
		}
	}
	return missing
}
