//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package profile

import "sync"

// lockMu stands in for flock where it is not available: it serialises the
// goroutines of one process only.
var lockMu sync.Mutex

func lockFile(string) (unlock func(), err error) {
	lockMu.Lock()
	return lockMu.Unlock, nil
}
