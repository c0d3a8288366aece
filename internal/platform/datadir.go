//go:build unix

package platform

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// lockFileName is the file in a data dir that `up` holds an exclusive lock
// on while it runs. Two processes on one JetStream store would each rebuild
// the other's streams ("Stream state outdated"), so the second is refused.
const lockFileName = "a2a-platform.lock"

// lockDataDir takes the data dir's lock or says who holds it. The lock is
// the operating system's (flock), so it goes with the process however that
// ends; the returned function releases it earlier, and may be called twice.
func lockDataDir(dir string) (func(), error) {
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("platform: data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := "another a2a-platform process"
			if pid := strings.TrimSpace(string(holder)); pid != "" {
				who = "a2a-platform process " + pid
			}
			return nil, fmt.Errorf("platform: data dir %s is in use by %s; stop it first, or give this one another --data-dir", dir, who)
		}
		return nil, fmt.Errorf("platform: data dir lock: %w", err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return sync.OnceFunc(func() { _ = f.Close() }), nil
}
