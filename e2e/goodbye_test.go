package e2e

import (
	"syscall"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// A runtime stopped with Ctrl-C (or its service stopped) says goodbye:
// the platform shows it offline as soon as it has gone, not once its
// heartbeats have been missing for the heartbeat timeout, so nobody sends
// it work in the meantime believing it online. Over both transports.
func TestGoodbye_AGracefullyStoppedRuntimeIsOfflineAtOnce(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"nats", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			l := newLab(t)
			// A heartbeat timeout no test waits out: offline can only
			// come from the goodbye.
			p := l.startPlatform(platformOptions{heartbeatTimeout: 10 * time.Minute})
			c := l.connect(p, l.startAdapter("echo").Endpoint, "--transport", transport)
			c.rt.signal(t, syscall.SIGINT)
			if code := c.rt.waitExit(t, waitStart); code != 0 {
				t.Fatalf("the runtime exited %d after Ctrl-C:\n%s", code, c.rt.shown(40))
			}
			meshtest.Eventually(t, 10*time.Second, func() bool {
				views := p.RuntimeViews(t, c.AgentID)
				return len(views) == 1 && views[0].Status == mesh.PresenceOffline
			}, func() string { return "the stopped runtime is still shown online" })
		})
	}
}
