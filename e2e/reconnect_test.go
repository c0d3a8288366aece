package e2e

import (
	"net/url"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// Seed 001 §9 "Reconnect", §4.7: a runtime killed and started again with
// the same profile comes back online and works, without a new pairing code
// and as the same runtime.
func TestReconnect_KilledRuntimeStartedAgainResumesWithoutNewPairingCode(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	c := l.connect(p, l.startAdapter("echo").Endpoint)
	waitEnded(t, p.Platform, c.task("before").ID, mesh.StatusCompleted, waitStart)

	c.rt.kill()
	waitPresence(t, p.Platform, c.AgentID, c.RuntimeID, mesh.PresenceOffline, waitLost)
	restarted := time.Now()
	c.m.startRuntime()
	v := waitOnline(t, p.Platform, c.AgentID, c.RuntimeID)
	if v.LastHeartbeatAt == nil || v.LastHeartbeatAt.Before(restarted) {
		t.Errorf("last heartbeat %v is not after the restart %v", v.LastHeartbeatAt, restarted)
	}
	after := waitEnded(t, p.Platform, c.task("after").ID, mesh.StatusCompleted, waitStart)
	if after.RuntimeID != c.RuntimeID {
		t.Errorf("the run after the restart was done by runtime %s, want %s", after.RuntimeID, c.RuntimeID)
	}

	evs := events(t, p.Platform, url.Values{"agent_id": {c.AgentID}})
	if n := countEvents(evs, mesh.EventPairingCodeIssued, ""); n != 1 {
		t.Errorf("%d pairing codes were issued for the agent, want 1", n)
	}
	if n := countEvents(evs, mesh.EventRuntimeAttached, ""); n != 1 {
		t.Errorf("%d runtimes attached to the agent, want 1", n)
	}
	if rts := p.RuntimeViews(t, c.AgentID); len(rts) != 1 || rts[0].State != mesh.RuntimeActive {
		t.Errorf("the agent's runtimes after the restart: %+v, want the one active runtime", rts)
	}
	if f := c.m.profileFile(); len(f.Profiles) != 1 || f.Profiles[c.Name()].RuntimeToken != c.Token {
		t.Errorf("the restart changed the profile file: profiles %v, token kept %t", f.names(), f.Profiles[c.Name()].RuntimeToken == c.Token)
	}
}

// A platform restarted while the runtime runs is found again by the runtime
// on its own, over either transport, and the next run completes.
func TestReconnect_RuntimeReconnectsByItselfAfterPlatformRestart(t *testing.T) {
	eachTransport(t, func(t *testing.T, l *lab, transport string) {
		p := l.startPlatform(platformOptions{})
		c := l.connect(p, l.startAdapter("echo").Endpoint, "--transport", transport)
		waitEnded(t, p.Platform, c.task("before").ID, mesh.StatusCompleted, waitStart)

		p.stop()
		p.start()
		restarted := time.Now()
		run := c.task("after the restart")
		done := waitEnded(t, p.Platform, run.ID, mesh.StatusCompleted, waitLost)
		if outputOf(t, done)["text"] != "after the restart" {
			t.Errorf("output after the restart: %s", done.Output)
		}
		meshtest.Eventually(t, waitStart, func() bool {
			v := p.RuntimeView(t, c.AgentID, c.RuntimeID)
			return v.Status == mesh.PresenceOnline && v.LastHeartbeatAt != nil && v.LastHeartbeatAt.After(restarted)
		}, func() string { return "no heartbeat after the platform restart" })
		if !c.rt.running() {
			t.Fatalf("the runtime exited: %s", c.rt.exitText())
		}
	})
}
