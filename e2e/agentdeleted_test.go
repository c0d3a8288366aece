package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// A runtime whose agent is deleted stops with exit code 3 and says the
// agent was deleted: not to pair "this same agent" again, which no longer
// exists. Started again with its profile, it says the same at once.
func TestAgentDeleted_RuntimeSaysItsAgentWasDeletedInsteadOfPairingItAgain(t *testing.T) {
	eachTransport(t, func(t *testing.T, l *lab, transport string) {
		p := l.startPlatform(platformOptions{})
		c := l.connect(p, l.startAdapter("echo").Endpoint, "--transport", transport)

		p.forTest(t).Send(t, meshtest.Request{Method: http.MethodDelete, Path: "/agent-accounts/" + c.AgentID, Owner: true}).
			Expect(t, http.StatusOK)
		for _, rt := range []*proc{c.rt, c.m.spawnRuntime("--transport", transport)} {
			if code := rt.waitExit(t, waitLost); code != 3 {
				t.Fatalf("exit code %d, want 3; output:\n%s", code, rt.shown(4000))
			}
			msg := rt.stderr.String()
			for _, want := range []string{"agent " + c.AgentID + " no longer exists", "deleted", "a2a-runtime unpair"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the runtime's last words do not say %q:\n%s", want, tail(l.secrets.Mask(msg), 2000))
				}
			}
			for _, wrong := range []string{"same agent", "do not create a new agent"} {
				if strings.Contains(msg, wrong) {
					t.Errorf("the runtime still advises %q for a deleted agent:\n%s", wrong, tail(l.secrets.Mask(msg), 2000))
				}
			}
			if strings.Contains(rt.output(), c.Token) {
				t.Errorf("the runtime printed its token")
			}
		}
	})
}
