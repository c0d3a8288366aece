package runtimeengine

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/mesh"
)

// TestLostClaims_KeptAndDroppedRequestsAreLogged: each request whose
// answer did not arrive is told of, and so is one no longer asked about
// because too many are kept: runs it claimed are left to their leases, a
// loss an operator must be able to find in the runtime's log.
func TestLostClaims_KeptAndDroppedRequestsAreLogged(t *testing.T) {
	var out bytes.Buffer
	l := lostClaims{log: zerolog.New(&out)}
	for range maxLost {
		l.add(mesh.NewID(), time.Now())
	}
	if got := strings.Count(out.String(), `"level":"info"`); got != maxLost || strings.Contains(out.String(), `"level":"warn"`) {
		t.Fatalf("%d requests kept logged %d info lines (want %d) and no warning:\n%s", maxLost, got, maxLost, out.String())
	}
	out.Reset()
	l.add(mesh.NewID(), time.Now())
	if l.len() != maxLost || !strings.Contains(out.String(), `"level":"warn"`) || !strings.Contains(out.String(), `"dropped":1`) {
		t.Fatalf("one more request: %d kept, log:\n%s\nwant %d kept and a warning that one was dropped", l.len(), out.String(), maxLost)
	}
}
