package demand

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// TestBadInput checks that each kind of bad input is one line that names
// what is wrong.
func TestBadInput(t *testing.T) {
	cases := []struct {
		name string
		err  func() error
		want string
	}{
		{"CSV time going backwards", func() error {
			_, err := ReadCSV(strings.NewReader("time_ns,usage_ns\n0,0\n10000000,5000000\n5000000,6000000\n"))
			return err
		}, "line 4: time 5000000 ns is not after"},
		{"CSV header", func() error { _, err := ReadCSV(strings.NewReader("t,u\n0,0\n")); return err }, "line 1: header"},
		{"CSV garbage", func() error { _, err := ReadCSV(strings.NewReader("time_ns,usage_ns\n0,zero\n")); return err }, "line 2:"},
		{"CSV of binary data", func() error { _, err := ReadCSV(strings.NewReader("\x00\x01PK\x03\x04\xff\xfe\n0,0\n")); return err }, "line 1: not text (binary data)"},
		{"CSV header too long to print", func() error {
			_, err := ReadCSV(strings.NewReader(strings.Repeat("when,", 100) + "\n0,0\n"))
			if err != nil && len(err.Error()) > 200 {
				return fmt.Errorf("%d characters: %w", len(err.Error()), err)
			}
			return err
		}, `line 1: header "when,when,`},
		{"CSV gzip cut short", func() error {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			zw.Write([]byte("time_ns,usage_ns\n0,0\n10000000,5000000\n"))
			zw.Close()
			_, err := ReadCSV(bytes.NewReader(b.Bytes()[:b.Len()-6]))
			return err
		}, "gzip: unexpected EOF"},
		{"pid that does not exist", func() error {
			_, err := FindPid(watchtest.FakeRoot(t, "v2-kubepods-systemd"), 999999)
			return err
		}, "pid 999999: no such process"},
		{"pod that is not there", func() error {
			_, err := FindPod(watchtest.FakeRoot(t, "v2-kubepods-systemd"), "web/nope")
			return err
		}, "no such pod"},
		{"group without the cpu controller", func() error {
			root := watchtest.FakeRoot(t, "v2-kubepods-systemd")
			os.MkdirAll(filepath.Join(root, "sys/fs/cgroup/nocpu"), 0o755)
			_, err := FindPath(root, "/nocpu")
			return err
		}, "no cpu controller"},
		{"group that does not exist", func() error {
			_, err := FindPath(watchtest.FakeRoot(t, "v2-kubepods-systemd"), "/nope")
			return err
		}, "no such cgroup"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			if err == nil {
				t.Fatalf("no error, want one with %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want one line containing %q", err, tc.want)
			}
		})
	}
}

// TestCSVGzip reads the same samples plain and gzip-compressed (a .csv.gz
// as testdata and archives keep them): the same demand.
func TestCSVGzip(t *testing.T) {
	text := "time_ns,usage_ns,cpu0_ns,cpu1_ns\n0,0,0,0\n10000000,5000000,4000000,1000000\n20000000,12000000,8000000,4000000\n"
	plain, err := ReadCSV(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(text))
	zw.Close()
	path := filepath.Join(t.TempDir(), "usage.csv.gz")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	zd, err := ReadCSV(fh)
	if err != nil {
		t.Fatalf("gzip-compressed: %v", err)
	}
	if zd.Duration() != plain.Duration() || zd.Work() != plain.Work() || len(zd.PerCPU) != 2 || zd.CPUsUsed() != plain.CPUsUsed() {
		t.Errorf("gzip-compressed: %s of samples, %s of work, %d per-CPU columns; plain: %s, %s, %d", zd.Duration(), zd.Work(), len(zd.PerCPU), plain.Duration(), plain.Work(), len(plain.PerCPU))
	}
}

func TestCSVGapIsCutOut(t *testing.T) {
	d, err := ReadCSV(strings.NewReader("time_ns,usage_ns\n0,0\n10000000,5000000\n5010000000,2000000000\n5020000000,2005000000\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], "samples 2-3") {
		t.Errorf("warnings %q: want one naming samples 2-3", d.Warnings)
	}
	// The 5 s gap becomes one idle 10 ms step; the CPU used across it is dropped.
	if d.Duration() != 30*time.Millisecond || d.Work() != 10*time.Millisecond || d.Excluded != 5*time.Second {
		t.Errorf("after the cut: %s of samples, %s of work, %s excluded; want 30ms, 10ms, 5s", d.Duration(), d.Work(), d.Excluded)
	}
}

// TestCSVResetIsCutOut: usage that falls (a restarted group) is a warning,
// the interval across it counts no use, and the demand goes on from the new
// counter.
func TestCSVResetIsCutOut(t *testing.T) {
	d, err := ReadCSV(strings.NewReader("time_ns,usage_ns\n0,0\n10000000,5000000\n20000000,4000000\n30000000,9000000\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], "sample 3 at 20ms: usage fell") {
		t.Errorf("warnings %q: want one naming sample 3", d.Warnings)
	}
	if d.Work() != 10*time.Millisecond || d.Excluded != 10*time.Millisecond {
		t.Errorf("after the reset: %s of work, %s excluded; want 10ms and 10ms", d.Work(), d.Excluded)
	}
}

// TestFindPod finds pods by name and by UID in the kubepods trees top's
// tests use: cgroupfs naming on v1, systemd naming on v2.
func TestFindPod(t *testing.T) {
	for _, tc := range []struct{ tree, pod, wantSuffix string }{
		{"v2-kubepods-systemd", "web/api-0", "kubepods-burstable-podabcdef01_2345_4678_9abc_def012345678.slice"},
		{"v2-kubepods-systemd", "abcdef01-2345-4678-9abc-def012345678", "kubepods-burstable-podabcdef01_2345_4678_9abc_def012345678.slice"},
		{"v1-joined-kubepods-cgroupfs", "1f2e3d4c-5b6a-4789-8abc-def012345678", "/kubepods/burstable/pod1f2e3d4c-5b6a-4789-8abc-def012345678"},
	} {
		t.Run(tc.tree+" "+tc.pod, func(t *testing.T) {
			g, err := FindPod(watchtest.FakeRoot(t, tc.tree), tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(g.Path, tc.wantSuffix) {
				t.Errorf("path %s, want it to end in %s", g.Path, tc.wantSuffix)
			}
			if _, err := g.Stat(); err != nil {
				t.Errorf("cpu.stat: %v", err)
			}
		})
	}
}
