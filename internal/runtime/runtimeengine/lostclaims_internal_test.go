package runtimeengine

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestLostClaims_KeptAndDroppedRequestsAreLogged: each request whose
// answer did not arrive is told of, and so is one no longer asked about
// because too many are kept: runs it claimed are no longer taken up, which
// an operator must be able to find in the runtime's log.
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

// TestLostClaims_HeartbeatsNameTheRequestsNoLongerAskedAbout: a request
// pushed out by too many kept is named by each heartbeat, so the task
// queue gives back what it claimed; the heartbeat names at most
// meshapi.MaxAbandonedClaimKeys of them, the newest, and none once
// abandonedFor has passed.
func TestLostClaims_HeartbeatsNameTheRequestsNoLongerAskedAbout(t *testing.T) {
	const most = meshapi.MaxAbandonedClaimKeys
	l := lostClaims{log: zerolog.Nop()}
	if hb := l.withAbandoned(meshapi.HeartbeatRequest{}); hb.AbandonedClaimKeys != nil {
		t.Fatalf("with nothing abandoned the heartbeat names %v", hb.AbandonedClaimKeys)
	}
	var keys []string
	for range maxLost + most + 3 {
		keys = append(keys, mesh.NewID())
		l.add(keys[len(keys)-1], time.Now())
	}
	hb := l.withAbandoned(meshapi.HeartbeatRequest{RunningTaskRunIDs: []string{}})
	want := keys[3 : 3+most]
	if strings.Join(hb.AbandonedClaimKeys, ",") != strings.Join(want, ",") {
		t.Fatalf("the heartbeat names %d keys, want the %d newest pushed out (keys 3 to %d)", len(hb.AbandonedClaimKeys), most, 2+most)
	}
	l.abandoned[0].at = time.Now().Add(-abandonedFor - time.Second)
	if hb := l.withAbandoned(meshapi.HeartbeatRequest{}); len(hb.AbandonedClaimKeys) != most-1 || hb.AbandonedClaimKeys[0] != want[1] {
		t.Fatalf("after one was abandoned longer than %s the heartbeat names %d keys, want %d without it", abandonedFor, len(hb.AbandonedClaimKeys), most-1)
	}
}
