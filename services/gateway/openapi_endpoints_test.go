package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/partnerapi"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// driveEndpointRoutes calls every route of delegation, the partner routes and
// the envelope protocol once with success (and some refusals), checking
// each answer against the OpenAPI document. It brings two agents of its
// own online.
func driveEndpointRoutes(t *testing.T, o *openAPI, p *meshtest.Platform) {
	t.Helper()
	call := func(r meshtest.Request) *meshtest.Response {
		t.Helper()
		resp := p.Send(t, r)
		o.check(r.Method, r.Path, resp)
		return resp
	}
	owner := func(method, path string, body any) *meshtest.Response {
		t.Helper()
		return call(meshtest.Request{Method: method, Path: path, Owner: true, JSON: body})
	}
	a := meshtest.StartOnlineAgent(t, p, meshtest.AgentOptions{Name: "endpoints A"})
	b := meshtest.StartOnlineAgent(t, p, meshtest.AgentOptions{Name: "endpoints B"})
	var key meshapi.CreateA2AKeyResponse
	p.Do(http.MethodPost, "/a2a/"+a.Agent.ID+"/api-keys", nil, &key)
	keyed := func(method, path string, body any) *meshtest.Response {
		t.Helper()
		return call(meshtest.Request{Method: method, Path: path, Header: http.Header{"X-Api-Key": {key.APIKey}}, JSON: body})
	}

	// Routing rules and a delegation's trace.
	rules := "/agent-accounts/" + a.Agent.ID + "/routing-rules"
	var rule meshapi.RoutingRule
	owner(http.MethodPost, rules, map[string]any{"match": map[string]any{"keywords": []string{"documented"}}, "target": map[string]any{"agent_id": b.Agent.ID}}).
		Expect(t, http.StatusCreated).Decode(t, &rule)
	owner(http.MethodPost, rules, map[string]any{"match": map[string]any{"regex": "("}, "target": map[string]any{"agent_id": b.Agent.ID}}).Expect(t, http.StatusBadRequest)
	owner(http.MethodGet, rules, nil).Expect(t, http.StatusOK)
	parent := p.CreateTask(a.Agent.ID, "documented delegation")
	p.WaitTask(parent.ID, 30*time.Second, meshtest.StatusIs(mesh.StatusCompleted))
	owner(http.MethodGet, "/task-runs/"+parent.ID+"/trace", nil).Expect(t, http.StatusOK)
	owner(http.MethodDelete, rules+"/"+rule.RuleID, nil).Expect(t, http.StatusNoContent)

	// Partner routes.
	keyed(http.MethodGet, "/a2a/discovery", nil).Expect(t, http.StatusOK)
	keyed(http.MethodPost, "/a2a/message", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "agent.list"}).Expect(t, http.StatusOK)
	keyed(http.MethodPost, "/a2a/message", map[string]any{"jsonrpc": "1.0", "id": 1, "method": "agent.list"}).Expect(t, http.StatusOK)
	var task partnerapi.Task
	keyed(http.MethodPost, "/a2a/task", map[string]any{"method": "story.generate", "params": map[string]any{"theme": "doc"}, "clientAgentId": "doc", "remoteAgentId": a.Agent.ID}).
		Expect(t, http.StatusOK).Decode(t, &task)
	keyed(http.MethodPost, "/a2a/task", map[string]any{"params": map[string]any{}}).Expect(t, http.StatusBadRequest)
	p.WaitTask(task.TaskID, 30*time.Second, meshtest.StatusIs(mesh.StatusCompleted))
	keyed(http.MethodGet, "/a2a/status?taskId="+task.TaskID, nil).Expect(t, http.StatusOK)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.APIBase+"/a2a/status?taskId="+task.TaskID, nil)
	req.Header.Set("X-API-Key", key.APIKey)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	o.check(http.MethodGet, "/a2a/status", &meshtest.Response{Status: resp.StatusCode, Header: resp.Header})

	// Partner registry and a signed callback about a task delegated out.
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"taskId": "doc-remote", "state": "submitted"})
	}))
	defer remote.Close()
	var partner meshapi.CreatePartnerResponse
	owner(http.MethodPost, "/a2a/partners", map[string]any{"name": "documented", "url": remote.URL}).Expect(t, http.StatusCreated).Decode(t, &partner)
	owner(http.MethodGet, "/a2a/partners", nil).Expect(t, http.StatusOK)
	owner(http.MethodPost, rules, map[string]any{"match": map[string]any{"keywords": []string{"outward"}}, "target": map[string]any{"partner_id": partner.PartnerID}}).Expect(t, http.StatusCreated)
	out := p.CreateTask(a.Agent.ID, "outward bound")
	p.WaitTask(out.ID, 30*time.Second, func(r mesh.TaskRun) bool { return r.DelegatedTo != nil && r.DelegatedTo.RemoteTaskID != "" })
	body, _ := json.Marshal(map[string]any{"taskId": "doc-remote", "state": "working", "progress": 10})
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	call(meshtest.Request{Method: http.MethodPost, Path: "/a2a/webhook", Body: body, ContentType: "application/json", Header: http.Header{
		partnerapi.HeaderPartnerID: {partner.PartnerID}, partnerapi.HeaderTimestamp: {ts}, partnerapi.HeaderSignature: {partnerapi.Sign(partner.Secret, ts, body)}}}).Expect(t, http.StatusOK)
	call(meshtest.Request{Method: http.MethodPost, Path: "/a2a/webhook", JSON: map[string]any{"taskId": "doc-remote", "state": "working"}}).Expect(t, http.StatusUnauthorized)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + out.ID + "/cancel", Owner: true}).Expect(t, http.StatusOK)
	owner(http.MethodDelete, "/a2a/partners/"+partner.PartnerID, nil).Expect(t, http.StatusNoContent)

	// Envelope protocol.
	envelope := func(id, method string, params map[string]any) map[string]any {
		return map[string]any{
			"a2a":     map[string]any{"protocol": "a2a", "version": "1.0", "id": id, "timestamp": time.Now().UTC().Format(time.RFC3339), "type": "request"},
			"context": map[string]any{"from": "doc", "to": a.Agent.ID},
			"payload": map[string]any{"method": method, "params": params},
		}
	}
	keyed(http.MethodPost, "/a2a", envelope("doc-1", "execute-agent", map[string]any{"input": "documented"})).Expect(t, http.StatusOK)
	keyed(http.MethodPost, "/a2a", envelope("doc-2", "status", map[string]any{})).Expect(t, http.StatusOK)
	keyed(http.MethodPost, "/a2a", envelope("doc-3", "nope", map[string]any{})).Expect(t, http.StatusBadRequest)
	keyed(http.MethodGet, "/api/agents/status", nil).Expect(t, http.StatusOK)
	owner(http.MethodGet, "/api/executions?agentId="+a.Agent.ID+"&status=success&limit=5&offset=0", nil).Expect(t, http.StatusOK)
	keyed(http.MethodGet, "/api/executions", nil).Expect(t, http.StatusForbidden)
}
