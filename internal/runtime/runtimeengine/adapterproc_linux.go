package runtimeengine

import "syscall"

// adapterSysProcAttr has the kernel stop a supervised adapter when the
// runtime dies without stopping it (SIGKILL), so no adapter is left holding
// the port for the next runtime. Its own process group keeps a Ctrl-C in
// the terminal for the runtime, which stops the adapter once its running
// tasks have drained.
func adapterSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
}
