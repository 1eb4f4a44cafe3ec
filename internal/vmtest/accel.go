package vmtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// KVMHost names the host files that say whether a standard KVM is there.
// Tests point them at a temporary directory.
type KVMHost struct {
	// Device is KVM's device node (/dev/kvm).
	Device string
	// PVMModule is the sysfs directory of the kvm_pvm module
	// (/sys/module/kvm_pvm): where it exists, /dev/kvm belongs to PVM, a
	// paravirtualised KVM on which a stock Debian kernel cannot run (qemu
	// stops at once, "failed to set MSR", or the guest with
	// "INTERNAL_ERROR in batch emul").
	PVMModule string
}

// DefaultKVMHost is the running host's.
var DefaultKVMHost = KVMHost{Device: "/dev/kvm", PVMModule: "/sys/module/kvm_pvm"}

// ProbeTimeout bounds the probe boot under KVM: a standard KVM boots the
// guest to its init within seconds.
const ProbeTimeout = 90 * time.Second

// PickAccel chooses qemu's accelerator for the matrix: "kvm" where the host
// has a standard KVM that really boots the guest, else "tcg" (software
// emulation, which works anywhere), with the reason in a few words. probe
// boots the guest under KVM and returns an error when it does not come up;
// it is called only when the host's files leave a standard KVM possible.
func (h KVMHost) PickAccel(ctx context.Context, probe func(context.Context) error) (accel, why string) {
	f, err := os.OpenFile(h.Device, os.O_RDWR, 0)
	if err != nil {
		return "tcg", fmt.Sprintf("no usable KVM (%v)", err)
	}
	f.Close()
	if _, err := os.Stat(h.PVMModule); err == nil {
		return "tcg", fmt.Sprintf("%s is PVM's (%s exists), which cannot boot a stock kernel", h.Device, h.PVMModule)
	}
	if err := probe(ctx); err != nil {
		return "tcg", fmt.Sprintf("a probe boot under KVM failed: %v", err)
	}
	return "kvm", "a probe boot under KVM came up"
}

// Probe boots the guest with vmtest.probe=1 on its command line: the init
// only says so and powers off. It fails unless that line came back.
func Probe(ctx context.Context, b Boot) error {
	ok := false
	var last []string
	err := b.RunWith(ctx, "vmtest.probe=1", func(s string) {
		if s == marker+" probe ok" {
			ok = true
		}
		last = append(last, s)
		if len(last) > 5 {
			last = last[1:]
		}
	})
	switch {
	case err != nil:
		return err
	case !ok:
		return errors.New("the guest's init never said it ran; its console ended with " + fmt.Sprintf("%q", last))
	}
	return nil
}
