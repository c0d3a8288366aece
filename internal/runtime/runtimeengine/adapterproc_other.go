//go:build !linux

package runtimeengine

import "syscall"

// adapterSysProcAttr: only Linux can tie the adapter's life to the runtime's.
func adapterSysProcAttr() *syscall.SysProcAttr { return nil }
