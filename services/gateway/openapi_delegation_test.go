package gateway_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// driveDelegationRoutes calls each delegation route a runtime's tool server
// uses over HTTP, for a run of a new agent allowed to delegate to another,
// and checks each answer against the OpenAPI document.
func driveDelegationRoutes(t *testing.T, o *openAPI, p *meshtest.Platform) {
	t.Helper()
	runtime := func(path, token string, body any) *meshtest.Response {
		t.Helper()
		r := meshtest.Request{Method: http.MethodPost, Path: path, RuntimeToken: token, JSON: body}
		resp := p.Send(t, r)
		o.check(r.Method, r.Path, resp)
		return resp.Expect(t, http.StatusOK)
	}
	planner, reviewer := p.CreateAgent("delegating planner"), p.CreateAgent("delegated reviewer")
	p.Do(http.MethodPatch, "/agent-accounts/"+planner.ID, map[string]any{"delegation": map[string]any{"agents": []string{reviewer.ID}}}, nil)
	rt, parent := p.HeldRun(t, planner.ID, "delegates")
	rev := p.OnlineRuntime(t, reviewer.ID)
	base := "/task-runs/" + parent.ID + "/delegation"

	runtime(base+"/agents", rt.RuntimeToken, map[string]any{})
	var sent meshapi.DelegateSendResponse
	runtime(base+"/send", rt.RuntimeToken, map[string]any{"agent_id": reviewer.ID, "text": "review", "request_id": "documented"}).Decode(t, &sent)
	var child mesh.TaskRun
	meshtest.Eventually(t, 20*time.Second, func() bool {
		r := p.Pull(t, reviewer.ID, rev.RuntimeToken, "")
		if r.Status != http.StatusOK {
			return false
		}
		child = r.Run(t)
		return true
	}, func() string { return "the delegated task never reached the reviewer" })
	var up struct {
		Artifact mesh.Artifact `json:"artifact"`
	}
	p.Report(t, child.ID, "artifacts", rev.RuntimeToken, map[string]any{"filename": "review.md", "content_text": "fine"}).Decode(t, &up)
	p.Report(t, child.ID, "complete", rev.RuntimeToken, map[string]any{"output": map[string]any{"text": "approved"}}).Expect(t, http.StatusOK)
	runtime(base+"/"+sent.TaskRunID+"/get", rt.RuntimeToken, map[string]any{"wait": int64(10 * time.Second)})
	runtime(base+"/"+sent.TaskRunID+"/artifact", rt.RuntimeToken, map[string]any{"artifact_id": up.Artifact.ID})

	var again meshapi.DelegateSendResponse
	runtime(base+"/send", rt.RuntimeToken, map[string]any{"agent_id": reviewer.ID, "text": "never mind", "request_id": "canceled"}).Decode(t, &again)
	runtime(base+"/"+again.TaskRunID+"/cancel", rt.RuntimeToken, map[string]any{})
}
