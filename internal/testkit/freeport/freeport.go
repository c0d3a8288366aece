// Package freeport hands out loopback TCP addresses for programs that a test
// or a benchmark starts and tells where to listen.
//
// Asking the kernel for port 0 and closing the listener is not enough: such
// a port comes from the ephemeral range, and any outbound connection made on
// the machine (a route between two NATS servers, an HTTP client) may take it
// before the program binds it, which happens seconds later when the program
// first waits for JetStream. So the ports handed out here lie below the
// kernel's ephemeral range, and each one is reserved for the life of the
// process that took it with an advisory lock on a file in the temporary
// directory, so concurrent test binaries never hand out the same port. The
// kernel drops the lock when the process ends, however it ends.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// The range ports are drawn from when the kernel's ephemeral range cannot be
// read; it lies below Linux's default ephemeral range (32768-60999).
const (
	defaultLow  = 20000
	defaultHigh = 32000
)

var (
	mu      sync.Mutex
	held    []*os.File // reservations live as long as the process
	lockDir = filepath.Join(os.TempDir(), "a2amesh-ports")
)

// Addr returns "127.0.0.1:port" for a port that is free now, outside the
// ephemeral range, and reserved against every other process using this
// package.
func Addr() (string, error) {
	lo, hi := portRange()
	if err := os.MkdirAll(lockDir, 0o777); err != nil {
		return "", fmt.Errorf("port reservations: %w", err)
	}
	for range 200 {
		port := lo + rand.IntN(hi-lo)
		if ok, err := reserve(port); err != nil {
			return "", err
		} else if ok {
			return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
		}
	}
	return "", errors.New("no free loopback port after 200 tries")
}

// reserve locks port's file and checks that nothing listens on the port.
func reserve(port int) (bool, error) {
	f, err := os.OpenFile(filepath.Join(lockDir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return false, fmt.Errorf("port reservation: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false, nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		f.Close()
		return false, nil
	}
	ln.Close()
	mu.Lock()
	held = append(held, f)
	mu.Unlock()
	return true, nil
}

// portRange is the range below the kernel's ephemeral ports.
func portRange() (int, int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return defaultLow, defaultHigh
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return defaultLow, defaultHigh
	}
	first, err := strconv.Atoi(fields[0])
	if err != nil || first < 12000 {
		return defaultLow, defaultHigh
	}
	return 10000, first
}
