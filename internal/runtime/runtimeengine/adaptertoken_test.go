package runtimeengine

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/runtime/adapterclient"
)

// The adapter the runtime starts gets the runtime's token; a token file of
// its own among its arguments would have it refuse every request of the
// runtime, so it is not started with one.
func TestStartAdapter_RefusesArgumentsThatGiveTheAdapterATokenOfItsOwn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	client, err := adapterclient.New("http://" + addr + "/run-task")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	bin := filepath.Join(dir, "a2a-adapter")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\ntouch '"+ran+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--auth-token-file", "/some/file"},
		{"--workdir", "w", "--auth-token-file=/some/file", "--", "./agent.sh"},
	} {
		proc, err := StartAdapter(context.Background(), AdapterProcessConfig{Binary: bin, Provider: "command", Listen: addr, Args: args, Client: client})
		if err == nil {
			proc.Stop()
		}
		if err == nil || !strings.Contains(err.Error(), "--auth-token-file") {
			t.Errorf("args %q: err = %v, want a refusal naming --auth-token-file", args, err)
		}
		if _, serr := os.Stat(ran); serr == nil {
			t.Fatalf("args %q: the adapter was started", args)
		}
	}
	// After "--" the arguments are the command's, not the adapter's.
	if err := checkAdapterArgs([]string{"--workdir", "w", "--", "./agent.sh", "--auth-token-file", "x"}); err != nil {
		t.Errorf("a command's own --auth-token-file refused: %v", err)
	}
}
