package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/internal/testkit/natsserver"
)

// TestProfiles_ServeProfilesButNotTheCommandLine: --pprof-listen serves the
// runtime profiles, and not the process's command line, which may hold a
// URL with credentials in it.
func TestProfiles_ServeProfilesButNotTheCommandLine(t *testing.T) {
	addr := natsserver.FreeAddr(t)
	if err := serveProfiles(addr, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(path string) int {
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/debug/pprof/heap?debug=1"); code != http.StatusOK {
		t.Fatalf("heap profile: HTTP %d", code)
	}
	if code := get("/debug/pprof/cmdline"); code == http.StatusOK {
		t.Fatal("the command line is served")
	}
}
