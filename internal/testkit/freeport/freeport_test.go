package freeport

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

func TestAddr_PortsAreDistinctBindableAndBelowTheEphemeralRange(t *testing.T) {
	_, hi := portRange()
	seen := map[string]bool{}
	for range 50 {
		addr, err := Addr()
		if err != nil {
			t.Fatal(err)
		}
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
		_, portText, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(portText)
		if port >= hi {
			t.Fatalf("%s is in the ephemeral range (from %d)", addr, hi)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("a handed-out port cannot be bound: %v", err)
		}
		ln.Close()
	}
}

func TestAddr_AReservedPortIsLockedAgainstOtherProcesses(t *testing.T) {
	addr, err := Addr()
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(addr)
	// A lock taken through another open file is what another process sees.
	f, err := os.Open(filepath.Join(lockDir, port))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		t.Fatalf("port %s could be reserved a second time", port)
	}
}
