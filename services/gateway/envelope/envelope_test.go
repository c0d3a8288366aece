package envelope_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// endpoint is a platform with an online agent (real runtime, scripted host)
// and an API key of it.
type endpoint struct {
	t     *testing.T
	p     *meshtest.Platform
	agent *meshtest.OnlineAgent
	host  *meshtest.Scripted
	key   string
}

func startEndpoint(t *testing.T) *endpoint {
	t.Helper()
	p := meshtest.StartPlatform(t)
	host := meshtest.NewScripted("")
	a := meshtest.StartOnlineAgent(t, p, meshtest.AgentOptions{Name: "Claude Code Agent", Provider: host})
	var k meshapi.CreateA2AKeyResponse
	p.Do(http.MethodPost, "/a2a/"+a.Agent.ID+"/api-keys", map[string]any{"name": "envelope"}, &k)
	return &endpoint{t: t, p: p, agent: a, host: host, key: k.APIKey}
}

// post sends an envelope with the agent's key (none when key is "").
func (d *endpoint) post(key string, body any) *meshtest.Response {
	d.t.Helper()
	h := http.Header{}
	if key != "" {
		h.Set("X-API-Key", key)
	}
	return d.p.Send(d.t, meshtest.Request{Method: http.MethodPost, Path: "/a2a", Header: h, JSON: body})
}

// response is seed 002's response message.
type response struct {
	A2A struct {
		Protocol, Version, ID, InResponseTo, Timestamp, Type string
	} `json:"a2a"`
	Context struct {
		From, To, ConversationID string
	} `json:"context"`
	Payload struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code, Message, Reason, ExecutionID string
			ExecutionTime                      *int64
		} `json:"error"`
	} `json:"payload"`
}

// decode checks the response blocks field by field (seed 002) and returns it.
func decode(t *testing.T, r *meshtest.Response, inResponseTo string) response {
	t.Helper()
	var m response
	r.Decode(t, &m)
	h := m.A2A
	if h.Protocol != "a2a" || h.Version != "1.0" || h.Type != "response" || h.ID == "" || h.ID == inResponseTo || h.InResponseTo != inResponseTo {
		t.Fatalf("a2a block: %+v (in response to %q)", h, inResponseTo)
	}
	if _, err := time.Parse(time.RFC3339, h.Timestamp); err != nil {
		t.Fatalf("a2a.timestamp %q: %v", h.Timestamp, err)
	}
	if (m.Payload.Result == nil) == (m.Payload.Error == nil) {
		t.Fatalf("payload holds neither or both of result and error: %s", r.Body)
	}
	return m
}

// request is seed 002's request, as the seed writes it, with ids filled in.
func request(id, to, method string, params map[string]any) map[string]any {
	return map[string]any{
		"a2a":     map[string]any{"protocol": "a2a", "version": "1.0", "id": id, "timestamp": "2025-11-18T10:00:00.000Z", "type": "request"},
		"context": map[string]any{"from": "source-agent-id", "to": to, "conversationId": "conversation-id"},
		"payload": map[string]any{"method": method, "params": params},
	}
}

// TestEnvelope_SeedExamples replays seed 002's examples: execute-agent
// (whose working directory reaches the agent's host; environment variables
// are refused: refusals_test.go), status (ready, busy,
// error), the agents' status and the execution history.
func TestEnvelope_SeedExamples(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t)
	agentID := d.agent.Agent.ID
	started := time.Now()

	r := d.post(d.key, request("request-unique-id", agentID, "execute-agent", map[string]any{
		"agentId": agentID, "input": "Generated response from agent", "workingDirectory": "/srv/project",
	})).Expect(t, http.StatusOK)
	m := decode(t, r, "request-unique-id")
	if m.Context.From != agentID || m.Context.To != "source-agent-id" {
		t.Fatalf("context: %+v", m.Context)
	}
	var res struct {
		Output        string `json:"output"`
		ExecutionID   string `json:"executionId"`
		ExecutionTime *int64 `json:"executionTime"`
	}
	if err := json.Unmarshal(m.Payload.Result, &res); err != nil || res.Output != "Generated response from agent" || !mesh.ValidID(res.ExecutionID) || res.ExecutionTime == nil || *res.ExecutionTime < 0 {
		t.Fatalf("result: %s", m.Payload.Result)
	}
	select {
	case env := <-d.host.Environments:
		if env == nil || env.WorkingDirectory != "/srv/project" || len(env.Variables) != 0 {
			t.Fatalf("the host got the environment %+v", env)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the host never ran the task")
	}
	run := d.p.GetTask(res.ExecutionID)
	if run.Status != mesh.StatusCompleted || run.Environment != nil || run.TargetAgentID != agentID {
		t.Fatalf("the execution's run: %+v", run)
	}
	// The same message again is the same execution.
	again := decode(t, d.post(d.key, request("request-unique-id", agentID, "execute-agent", map[string]any{"agentId": agentID, "input": "Generated response from agent"})).Expect(t, http.StatusOK), "request-unique-id")
	if !strings.Contains(string(again.Payload.Result), res.ExecutionID) {
		t.Fatalf("a repeated message made another execution: %s", again.Payload.Result)
	}

	// Status: ready, then busy while a task runs.
	status := func() string {
		t.Helper()
		m := decode(t, d.post(d.key, request("status-request-id", agentID, "status", map[string]any{})).Expect(t, http.StatusOK), "status-request-id")
		var s struct {
			Status       string   `json:"status"`
			Capabilities []string `json:"capabilities"`
			AgentInfo    struct{ ID, Name, Version string }
		}
		if err := json.Unmarshal(m.Payload.Result, &s); err != nil || strings.Join(s.Capabilities, ",") != "execute-agent,status" ||
			s.AgentInfo.ID != agentID || s.AgentInfo.Name != "Claude Code Agent" || s.AgentInfo.Version == "" {
			t.Fatalf("status result: %s", m.Payload.Result)
		}
		return s.Status
	}
	if got := status(); got != "ready" {
		t.Fatalf("idle agent is %s", got)
	}
	busy := d.p.CreateTask(agentID, "wait for it")
	d.p.WaitTask(busy.ID, 30*time.Second, meshtest.StatusIs(mesh.StatusRunning))
	if got := status(); got != "busy" {
		t.Fatalf("working agent is %s", got)
	}

	// GET /api/agents/status.
	var agents struct {
		Agents []struct {
			ID, Name, Type, Status string
			LastExecution          *time.Time
			ConcurrentExecutions   int
			MaxConcurrent          int
		} `json:"agents"`
	}
	d.p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/api/agents/status", Header: http.Header{"X-Api-Key": {d.key}}}).Expect(t, http.StatusOK).Decode(t, &agents)
	if len(agents.Agents) != 1 {
		t.Fatalf("the key reaches %d agents", len(agents.Agents))
	}
	ag := agents.Agents[0]
	if ag.ID != agentID || ag.Name != "Claude Code Agent" || ag.Type != "custom" || ag.Status != "active" || ag.ConcurrentExecutions != 1 || ag.MaxConcurrent != 1 ||
		ag.LastExecution == nil || ag.LastExecution.Before(started.Add(-time.Second)) {
		t.Fatalf("agent status: %+v", ag)
	}
	d.host.Gate <- struct{}{}
	d.p.WaitTask(busy.ID, 30*time.Second, meshtest.StatusIs(mesh.StatusCompleted))
	failed := d.p.WaitTask(d.p.CreateTask(agentID, "fail once").ID, 30*time.Second, meshtest.StatusIs(mesh.StatusFailed))

	// GET /api/executions (the owner's).
	type executions struct {
		Executions []struct {
			ID, AgentID, Status string
			StartTime           time.Time
			EndTime             *time.Time
			ExecutionTime       int64
		} `json:"executions"`
		Total, Limit, Offset int
	}
	var all, page, successes executions
	owner := func(path string, out any) {
		t.Helper()
		d.p.Send(t, meshtest.Request{Method: http.MethodGet, Path: path, Owner: true}).Expect(t, http.StatusOK).Decode(t, out)
	}
	owner("/api/executions?agentId="+agentID, &all)
	if all.Total != 3 || all.Limit != 50 || all.Offset != 0 || len(all.Executions) != 3 || all.Executions[0].ID != failed.ID {
		t.Fatalf("executions: %+v", all)
	}
	for _, e := range all.Executions {
		if e.AgentID != agentID || e.EndTime == nil || e.ExecutionTime < 0 || e.StartTime.IsZero() || (e.Status != "success" && e.Status != "failed") {
			t.Fatalf("execution: %+v", e)
		}
	}
	owner("/api/executions?agentId="+agentID+"&status=success&limit=1&offset=1", &page)
	owner("/api/executions?status=success", &successes)
	if page.Total != 2 || page.Limit != 1 || page.Offset != 1 || len(page.Executions) != 1 || page.Executions[0].ID != res.ExecutionID || successes.Total != 2 {
		t.Fatalf("filtered page: %+v; all successes: %d", page, successes.Total)
	}
	d.p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/api/executions", Header: http.Header{"X-Api-Key": {d.key}}}).ExpectError(t, http.StatusForbidden, mesh.CodeForbidden)
	d.p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/api/executions?limit=x", Owner: true}).ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)

	// Offline: status says error.
	d.agent.Stop()
	meshtest.Eventually(t, 30*time.Second, func() bool { return d.p.RuntimeViews(t, agentID)[0].Status == mesh.PresenceOffline },
		func() string { return "the runtime never went offline" })
	if got := status(); got != "error" {
		t.Fatalf("offline agent is %s", got)
	}
	m = decode(t, d.post(d.key, request("late", agentID, "execute-agent", map[string]any{"agentId": agentID, "input": "hello?"})).Expect(t, http.StatusServiceUnavailable), "late")
	if m.Payload.Error.Code != "AGENT_UNAVAILABLE" {
		t.Fatalf("execute on an offline agent: %+v", m.Payload.Error)
	}
}

// TestEnvelope_MalformedMessagesGetAnErrorEnvelope: each rule of the blocks
// is enforced, answered with a response envelope whose payload is the
// error, and the right HTTP status.
func TestEnvelope_MalformedMessagesGetAnErrorEnvelope(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t)
	agentID := d.agent.Agent.ID
	mutate := func(f func(m map[string]any)) map[string]any {
		m := request("bad-id", agentID, "status", map[string]any{})
		f(m)
		return m
	}
	block := func(m map[string]any, name string) map[string]any { return m[name].(map[string]any) }
	for _, c := range []struct {
		name   string
		body   map[string]any
		status int
		code   string
	}{
		{"protocol", mutate(func(m map[string]any) { block(m, "a2a")["protocol"] = "A2A" }), 400, "INVALID_ENVELOPE"},
		{"version", mutate(func(m map[string]any) { block(m, "a2a")["version"] = "2.0" }), 400, "UNSUPPORTED_VERSION"},
		{"timestamp", mutate(func(m map[string]any) { block(m, "a2a")["timestamp"] = "yesterday" }), 400, "INVALID_ENVELOPE"},
		{"type", mutate(func(m map[string]any) { block(m, "a2a")["type"] = "response" }), 400, "INVALID_ENVELOPE"},
		{"from", mutate(func(m map[string]any) { delete(block(m, "context"), "from") }), 400, "INVALID_ENVELOPE"},
		{"context", mutate(func(m map[string]any) { delete(m, "context") }), 400, "INVALID_ENVELOPE"},
		{"method", mutate(func(m map[string]any) { block(m, "payload")["method"] = "" }), 400, "INVALID_ENVELOPE"},
		{"params", mutate(func(m map[string]any) { block(m, "payload")["params"] = []int{1} }), 400, "INVALID_ENVELOPE"},
		{"unknown method", mutate(func(m map[string]any) { block(m, "payload")["method"] = "dance" }), 400, "METHOD_NOT_FOUND"},
		{"no input", mutate(func(m map[string]any) { block(m, "payload")["method"] = "execute-agent" }), 400, "INVALID_PARAMS"},
		{"environment variables", mutate(func(m map[string]any) {
			block(m, "payload")["method"] = "execute-agent"
			block(m, "payload")["params"] = map[string]any{"input": "x", "environmentVariables": map[string]any{"PATH": "/evil"}}
		}), 400, "INVALID_PARAMS"},
		{"unknown agent", mutate(func(m map[string]any) { block(m, "context")["to"] = mesh.NewID() }), 404, "AGENT_NOT_FOUND"},
	} {
		m := decode(t, d.post(d.key, c.body).Expect(t, c.status), "bad-id")
		if m.Payload.Error.Code != c.code || m.Payload.Error.Message == "" {
			t.Errorf("%s: %+v, want %s", c.name, m.Payload.Error, c.code)
		}
	}
	m := decode(t, d.post("", request("anon", agentID, "status", map[string]any{})).Expect(t, http.StatusUnauthorized), "anon")
	if m.Payload.Error.Code != "UNAUTHENTICATED" {
		t.Fatalf("no credential: %+v", m.Payload.Error)
	}
	raw := d.p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a", Body: []byte(`{"a2a":`), ContentType: "application/json", Header: http.Header{"X-Api-Key": {d.key}}}).Expect(t, http.StatusBadRequest)
	var resp response
	raw.Decode(t, &resp)
	if resp.A2A.Type != "response" || resp.A2A.InResponseTo != "" || resp.Payload.Error.Code != "INVALID_ENVELOPE" {
		t.Fatalf("not JSON: %s", raw.Body)
	}
	// A failed execution: 200 with the error payload and its execution.
	m = decode(t, d.post(d.key, request("will-fail", agentID, "execute-agent", map[string]any{"input": "fail now"})).Expect(t, http.StatusOK), "will-fail")
	e := m.Payload.Error
	if e == nil || e.Code != "EXECUTION_FAILED" || e.Reason != "ADAPTER_REPORTED_FAILURE" || !mesh.ValidID(e.ExecutionID) || e.ExecutionTime == nil || !strings.Contains(e.Message, "scripted failure") {
		t.Fatalf("failed execution: %+v", e)
	}
}
