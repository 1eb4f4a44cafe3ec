//go:build !linux

package local

import "syscall"

// sysProcAttr puts a child in its own process group. Only Linux has cgroups
// and PDEATHSIG: elsewhere the backend builds but cannot make its groups.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
