package gateway_test

import (
	"net/http"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestHeartbeat_HTTPRuntimeWhoseAdapterIsDownIsOnlineButNotReady: a runtime
// on the HTTP transport says in its heartbeat that its adapter does not
// answer; the platform lists it online but not ready, as for NATS runtimes,
// and ready again once its adapter is back.
func TestHeartbeat_HTTPRuntimeWhoseAdapterIsDownIsOnlineButNotReady(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("adapterless")
	rt := p.Attach(agent.ID)
	beat := func(unreachable bool) {
		p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/runtime/heartbeat", RuntimeToken: rt.RuntimeToken,
			JSON: map[string]any{"adapter_unreachable": unreachable}}).Expect(t, http.StatusOK)
	}
	beat(true)
	v := p.WaitRuntimeView(t, agent.ID, rt.RuntimeID, func(v mesh.RuntimeView) bool { return v.Status == mesh.PresenceOnline && v.NotReady })
	if v.NotReadyReason == "" {
		t.Fatalf("not ready without a reason: %+v", v)
	}
	beat(false)
	p.WaitRuntimeView(t, agent.ID, rt.RuntimeID, func(v mesh.RuntimeView) bool { return v.Status == mesh.PresenceOnline && !v.NotReady })
}
