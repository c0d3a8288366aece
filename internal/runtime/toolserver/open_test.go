package toolserver_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/runtime/toolserver"
)

// A run whose host never calls a tool costs its runtime a capability and a
// listening socket, not an MCP server: making one infers and checks the
// schemas of every tool, thousands of allocations, on every run.
func TestOpen_RunWhoseHostCallsNoToolMakesNoMCPServer(t *testing.T) {
	s, err := toolserver.Start(toolserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// One run stays open, so the others reuse its listener, as the runs
	// of a runtime working on several at once do.
	_, keep, err := s.Open("run_kept")
	if err != nil {
		t.Fatal(err)
	}
	defer keep()
	allocs := testing.AllocsPerRun(50, func() {
		_, closeRun, err := s.Open("run_1")
		if err != nil {
			t.Fatal(err)
		}
		closeRun()
	})
	if allocs > 100 {
		t.Fatalf("opening and closing a run's tools allocates %.0f times; want at most 100 (no MCP server made)", allocs)
	}
}

// A runtime that takes its next run soon after the last keeps its socket
// (opening one per run cost a tenth of a busy runtime's CPU); the ended
// run's capability is gone all the same.
func TestOpen_NextRunSoonAfterKeepsTheListener(t *testing.T) {
	s, err := toolserver.Start(toolserver.Config{IdleClose: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, closeFirst, err := s.Open("run_1")
	if err != nil {
		t.Fatal(err)
	}
	url := s.URL()
	closeFirst()
	if s.URL() != url {
		t.Fatalf("the socket closed with the last run: %q, want %q kept for IdleClose", s.URL(), url)
	}
	_, closeSecond, err := s.Open("run_2")
	if err != nil {
		t.Fatal(err)
	}
	defer closeSecond()
	if s.URL() != url {
		t.Fatalf("the next run listens on %q, want the kept %q", s.URL(), url)
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+first)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the ended run's capability got %d, want 401", resp.StatusCode)
	}
}
