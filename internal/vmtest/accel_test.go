package vmtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/testenv"
)

// TestPickAccel: KVM only where the device opens, is not PVM's and a probe
// boot under it comes up; software emulation, with the reason, elsewhere.
func TestPickAccel(t *testing.T) {
	dir := t.TempDir()
	dev := filepath.Join(dir, "kvm")
	if err := os.WriteFile(dev, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	pvm := filepath.Join(dir, "kvm_pvm")
	if err := os.Mkdir(pvm, 0o755); err != nil {
		t.Fatal(err)
	}
	up := func(context.Context) error { return nil }
	down := func(context.Context) error { return errors.New("INTERNAL_ERROR in batch emul") }
	for _, tt := range []struct {
		name      string
		host      KVMHost
		probe     func(context.Context) error
		want, why string
	}{
		{"no device", KVMHost{Device: filepath.Join(dir, "none"), PVMModule: filepath.Join(dir, "none")}, up, "tcg", "no usable KVM"},
		{"PVM", KVMHost{Device: dev, PVMModule: pvm}, up, "tcg", "PVM"},
		{"probe fails", KVMHost{Device: dev, PVMModule: filepath.Join(dir, "none")}, down, "tcg", "INTERNAL_ERROR"},
		{"standard KVM", KVMHost{Device: dev, PVMModule: filepath.Join(dir, "none")}, up, "kvm", "came up"},
	} {
		probed := false
		got, why := tt.host.PickAccel(context.Background(), func(ctx context.Context) error { probed = true; return tt.probe(ctx) })
		if got != tt.want || !strings.Contains(why, tt.why) {
			t.Errorf("%s: %s (%s), want %s (%s)", tt.name, got, why, tt.want, tt.why)
		}
		if probed != (tt.name == "probe fails" || tt.name == "standard KVM") {
			t.Errorf("%s: probed %v", tt.name, probed)
		}
	}
}

// TestProbeReal boots a guest of busybox and the init under software
// emulation with the probe's command line, and sees the init say so: the
// probe's path through the init and the console, which on this machine
// kind (PVM) PickAccel never reaches. A guest whose init is wrong fails it.
func TestProbeReal(t *testing.T) {
	if why := Available("/bin/busybox"); why != "" {
		testenv.Unavailable(t, "%s", why)
	}
	ctx := context.Background()
	vmlinuz, err := Fetch(ctx, DefaultCacheDir, Kernels[0])
	if err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	for _, tt := range []struct {
		name string
		init string
		ok   bool
	}{
		{"the harness's init", "", true},
		{"an init that never answers", "#!/bin/busybox sh\n/bin/busybox poweroff -f\n", false},
	} {
		var a Archive
		if err := a.HostFile("bin/busybox", "/bin/busybox"); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{"proc", "sys", "dev", "tmp"} {
			a.Dir(d)
		}
		a.CharDev("dev/console", 5, 1)
		script := tt.init
		if script == "" {
			if script, err = InitScript(Layouts, nil, "/w"); err != nil {
				t.Fatal(err)
			}
		}
		a.File("init", []byte(script), 0o755)
		initrd := filepath.Join(t.TempDir(), "initrd.gz")
		f, err := os.Create(initrd)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.WriteTo(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		err = Probe(ctx, Boot{Kernel: vmlinuz, Initrd: initrd, CPUs: 1, MemoryMB: 256, Accel: "tcg", Timeout: 2 * time.Minute})
		if (err == nil) != tt.ok {
			t.Errorf("%s: probe: %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}
