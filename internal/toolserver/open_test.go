package toolserver_test

import (
	"testing"

	"github.com/a2amesh/a2amesh/internal/toolserver"
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
