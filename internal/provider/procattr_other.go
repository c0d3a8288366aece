//go:build !linux

package provider

import "syscall"

// hostProcAttr starts a host in its own process group, so the whole group can
// be stopped. Only Linux can also tie the host's life to the adapter's.
func hostProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
