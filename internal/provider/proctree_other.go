//go:build !linux

package provider

import (
	"errors"
	"syscall"
)

// BecomeSubreaper is Linux only: elsewhere a process a host moved to a
// session of its own and left behind is out of the adapter's reach once
// its parent is gone (see docs/adapter.md).
func BecomeSubreaper() error {
	return errors.New("adopting orphaned processes is only possible on Linux")
}

// hostTree finds no processes outside the host's group where there is no
// /proc to walk; the group itself is stopped by stopGroup.
func hostTree(pid int, owned map[int]bool) int { return 0 }

func signalOwned(owned map[int]bool, sig syscall.Signal) {}
