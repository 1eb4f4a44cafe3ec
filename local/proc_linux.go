package local

import "syscall"

// sysProcAttr puts a child in its own process group and kills it when the
// runner dies (PDEATHSIG), so even a killed runner leaves no process behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
