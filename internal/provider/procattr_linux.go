package provider

import "syscall"

// hostProcAttr starts a host in its own process group (so the whole group can
// be stopped) and asks the kernel to kill it if the adapter itself dies
// (SIGKILL, crash): a host must not outlive the adapter that would stop it.
// The kernel signals only the host process; what it started in its group is
// stopped by the adapter when it stops a task normally.
func hostProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
