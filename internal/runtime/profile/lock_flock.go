//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package profile

import (
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on path, creating it, and returns
// the function that releases it. flock locks belong to the open file
// description, so they exclude goroutines of one process as well as separate
// processes. The lock file is never removed: removing it would let two
// processes lock two different files of the same name.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file %s: %w", path, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		// Closing the descriptor releases the lock.
		f.Close()
	}, nil
}
