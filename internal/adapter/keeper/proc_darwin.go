package keeper

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// becomeSubreaper does nothing on macOS, which has no subreaper: a process
// whose parent exits goes to launchd, out of the keeper's sight unless it
// stayed in the host's process group.
func becomeSubreaper() error { return nil }

// hostProcAttr starts the host in a process group of its own, so that one
// signal reaches what it starts there.
func hostProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

func setName() {}

// Descendants lists every process below root from the kernel's process
// table (sysctl kern.proc.all).
func Descendants(root int) []int {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, p := range procs {
		children[int(p.Eproc.Ppid)] = append(children[int(p.Eproc.Ppid)], int(p.Proc.P_pid))
	}
	return below(children, root)
}
