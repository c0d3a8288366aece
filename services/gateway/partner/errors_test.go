package partner_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/partnerapi"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestPartner_EnvelopeRules: seed 003's JSON-RPC envelope rules, each
// refused with its code (-32700 for what is not JSON, -32600 otherwise),
// answering the request's id when it could be read.
func TestPartner_EnvelopeRules(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, nil)
	for _, c := range []struct {
		name, body string
		code       int
		id         any
	}{
		{"not JSON", `{"jsonrpc":`, partnerapi.CodeParseError, nil},
		{"not an object", `[1,2]`, partnerapi.CodeInvalidRequest, nil},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":"a","method":"agent.list"}`, partnerapi.CodeInvalidRequest, "a"},
		{"jsonrpc missing", `{"id":7,"method":"agent.list"}`, partnerapi.CodeInvalidRequest, float64(7)},
		{"id an object", `{"jsonrpc":"2.0","id":{"x":1},"method":"agent.list"}`, partnerapi.CodeInvalidRequest, nil},
		{"method empty", `{"jsonrpc":"2.0","id":"b","method":""}`, partnerapi.CodeInvalidRequest, "b"},
		{"method a number", `{"jsonrpc":"2.0","id":"c","method":5}`, partnerapi.CodeInvalidRequest, "c"},
		{"params a string", `{"jsonrpc":"2.0","id":"d","method":"agent.list","params":"x"}`, partnerapi.CodeInvalidRequest, "d"},
	} {
		r := d.p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a/message", Body: []byte(c.body), ContentType: "application/json", Header: http.Header{"X-Api-Key": {d.key}}})
		a := decodeRPC(t, r.Expect(t, http.StatusOK))
		if a.Error == nil || a.Error.Code != c.code || a.ID != c.id || a.Result != nil {
			t.Errorf("%s: %s", c.name, r.Body)
		}
	}
	// Valid envelopes: a null id, array params.
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":null,"method":"agent.list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"agent.list","params":[]}`,
	} {
		r := d.p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a/message", Body: []byte(body), ContentType: "application/json", Header: http.Header{"X-Api-Key": {d.key}}})
		if a := decodeRPC(t, r.Expect(t, http.StatusOK)); a.Error != nil || !strings.Contains(string(a.Result), d.agent.Agent.ID) {
			t.Errorf("%s: %s", body, r.Body)
		}
	}
}

// TestPartner_ErrorCatalog: each of seed 003's A2A codes where this
// platform has its meaning, and the transport variants.
func TestPartner_ErrorCatalog(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, nil)
	agentID := d.agent.Agent.ID
	rpc := func(key, method string, params map[string]any) (*meshtest.Response, rpcAnswer) {
		t.Helper()
		body := map[string]any{"jsonrpc": "2.0", "id": "e", "method": method}
		if params != nil {
			body["params"] = params
		}
		r := d.call(http.MethodPost, "/a2a/message", "X-API-Key", key, body)
		return r, decodeRPC(t, r)
	}
	code := func(name string, r *meshtest.Response, a rpcAnswer, status, want int) {
		t.Helper()
		if r.Status != status || a.Error == nil || a.Error.Code != want {
			t.Errorf("%s: HTTP %d %s, want %d with %d", name, r.Status, r.Body, status, want)
		}
	}
	r, a := rpc(d.key, "tasks/get", map[string]any{"taskId": mesh.NewID()})
	code("unknown task", r, a, http.StatusOK, partnerapi.CodeTaskNotFound)

	done := d.p.WaitTask(d.p.CreateTask(agentID, "finished").ID, 30*time.Second, meshtest.StatusIs(mesh.StatusCompleted))
	// Created through another endpoint with the owner: this key does not see it.
	r, a = rpc(d.key, "tasks/cancel", map[string]any{"taskId": done.ID})
	code("another caller's task", r, a, http.StatusOK, partnerapi.CodeTaskNotFound)

	send := func(text string) string {
		t.Helper()
		_, a := rpc(d.key, "message/send", map[string]any{"agentId": agentID, "text": text, "blocking": false})
		if a.Error != nil {
			t.Fatalf("send: %+v", a.Error)
		}
		return decodeTask(t, a.Result).TaskID
	}
	completed := send("done soon")
	d.p.WaitTask(completed, 30*time.Second, meshtest.StatusIs(mesh.StatusCompleted))
	r, a = rpc(d.key, "tasks/cancel", map[string]any{"taskId": completed})
	code("cancel completed", r, a, http.StatusOK, partnerapi.CodeTaskAlreadyCompleted)

	waiting := send("wait a while")
	_, a = rpc(d.key, "tasks/cancel", map[string]any{"taskId": waiting})
	if a.Error != nil || decodeTask(t, a.Result).State != partnerapi.StateCanceled {
		t.Fatalf("cancel: %+v %s", a.Error, a.Result)
	}
	r, a = rpc(d.key, "tasks/cancel", map[string]any{"taskId": waiting})
	code("cancel canceled", r, a, http.StatusOK, partnerapi.CodeTaskCanceled)
	got := decodeTask(t, d.keyed(http.MethodGet, "/a2a/status?taskId="+waiting, nil).Expect(t, http.StatusOK).Body)
	if got.State != partnerapi.StateCanceled || got.Error == nil || got.Error.Code != partnerapi.CodeTaskCanceled {
		t.Fatalf("canceled Task: %+v", got)
	}

	failed := send("fail this")
	d.p.WaitTask(failed, 30*time.Second, meshtest.StatusIs(mesh.StatusFailed))
	r, a = rpc(d.key, "tasks/cancel", map[string]any{"taskId": failed})
	code("cancel failed", r, a, http.StatusOK, partnerapi.CodeInvalidTaskState)

	r, a = rpc(d.key, "message/send", map[string]any{"agentId": mesh.NewID(), "text": "x"})
	code("unknown agent", r, a, http.StatusOK, partnerapi.CodeAgentNotFound)
	other := d.p.CreateAgent("other")
	r, a = rpc(d.key, "message/send", map[string]any{"agentId": other.ID, "text": "x"})
	code("agent the key does not reach", r, a, http.StatusOK, partnerapi.CodeAgentNotFound)
	r, a = rpc(d.key, "tasks/pushNotificationConfig/set", map[string]any{"taskId": completed})
	code("push configuration", r, a, http.StatusOK, partnerapi.CodeCapabilityNotSupported)
	r, a = rpc(d.key, "story.generate", map[string]any{"characterId": "char_123"})
	code("a method without an agent", r, a, http.StatusOK, partnerapi.CodeMethodNotFound)
	r, a = rpc("a2akey_not-a-key", "agent.list", nil)
	code("bad key", r, a, http.StatusUnauthorized, partnerapi.CodeAuthenticationFailed)
	readOnly := d.newKey(agentID, []string{"a2a:read"})
	r, a = rpc(readOnly, "message/send", map[string]any{"agentId": agentID, "text": "x"})
	code("missing scope", r, a, http.StatusForbidden, partnerapi.CodeAuthenticationFailed)

	// A task past its deadline fails with -32010 in its Task.
	late := d.p.CreateTaskWith(t, map[string]any{"target_agent_id": other.ID, "input": map[string]any{"text": "too late"}, "timeout_seconds": 1}).Expect(t, http.StatusCreated).Run(t)
	d.p.WaitTask(late.ID, 30*time.Second, meshtest.StatusIs(mesh.StatusFailed))
	ownerHeader := "Bearer " + d.p.OwnerToken
	timedOut := decodeTask(t, d.call(http.MethodGet, "/a2a/status?taskId="+late.ID, "Authorization", ownerHeader, nil).Expect(t, http.StatusOK).Body)
	if timedOut.State != partnerapi.StateFailed || timedOut.Error == nil || timedOut.Error.Code != partnerapi.CodeTaskTimeout {
		t.Fatalf("timed-out Task: %+v", timedOut)
	}

	// Transport variants.
	var body struct {
		Error  string `json:"error"`
		Code   int    `json:"code"`
		Detail string `json:"detail"`
	}
	d.keyed(http.MethodPost, "/a2a/task", map[string]any{"params": map[string]any{}, "clientAgentId": "p", "remoteAgentId": agentID}).Expect(t, http.StatusBadRequest).Decode(t, &body)
	if !strings.Contains(body.Error, "method") {
		t.Errorf("missing method: %+v", body)
	}
	d.keyed(http.MethodPost, "/a2a/task", map[string]any{"method": "m", "remoteAgentId": agentID}).Expect(t, http.StatusBadRequest).Decode(t, &body)
	if !strings.Contains(body.Error, "clientAgentId") {
		t.Errorf("missing clientAgentId: %+v", body)
	}
	d.keyed(http.MethodGet, "/a2a/status", nil).Expect(t, http.StatusBadRequest).Decode(t, &body)
	if !strings.Contains(body.Error, "taskId") {
		t.Errorf("missing taskId: %+v", body)
	}
	// An agent no runtime was ever paired with cannot run a task: 503.
	d.call(http.MethodPost, "/a2a/task", "Authorization", ownerHeader, map[string]any{"method": "m", "clientAgentId": "p", "remoteAgentId": other.ID}).
		Expect(t, http.StatusServiceUnavailable).Decode(t, &body)
	if body.Error != "A2A adapter not available" || !strings.Contains(body.Detail, "no runtime paired") {
		t.Errorf("503 of /a2a/task: %+v", body)
	}
	// A synchronous call to an agent whose runtime is not online: 503 too.
	d.p.OnlineRuntime(t, other.ID)
	d.agent.Stop()
	meshtest.Eventually(t, 30*time.Second, func() bool {
		views := d.p.RuntimeViews(t, agentID)
		return len(views) > 0 && views[0].Status == mesh.PresenceOffline
	}, func() string { return "the runtime never went offline" })
	r, a = rpc(d.key, "story.generate", map[string]any{"agentId": agentID})
	if r.Status != http.StatusServiceUnavailable || a.Error == nil || a.Error.Code != partnerapi.CodeInternalError || a.Error.Message != "A2A adapter not available" {
		t.Errorf("503 of /a2a/message: HTTP %d %s", r.Status, r.Body)
	}
	// The webhook refuses what is not a partner's signed callback.
	d.p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a/webhook", JSON: map[string]any{"taskId": "x", "state": "working"}}).Expect(t, http.StatusUnauthorized)
}

// TestPartner_RateLimit: A2A_RATE_LIMIT_PER_MINUTE bounds each caller's
// requests to the partner routes (-32007, HTTP 429, Retry-After).
func TestPartner_RateLimit(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.A2ARateLimitPerMinute = 2 })
	body := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "agent.list"}
	for i := 0; i < 2; i++ {
		p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a/message", JSON: body}).Expect(t, http.StatusOK)
	}
	r := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a/message", JSON: body}).Expect(t, http.StatusTooManyRequests)
	a := decodeRPC(t, r)
	if a.Error == nil || a.Error.Code != partnerapi.CodeRateLimitExceeded || r.Header.Get("Retry-After") == "" {
		t.Fatalf("over the limit: %s (Retry-After %q)", r.Body, r.Header.Get("Retry-After"))
	}
	var e struct {
		Code int `json:"code"`
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/a2a/discovery"}).Expect(t, http.StatusTooManyRequests).Decode(t, &e)
	if e.Code != partnerapi.CodeRateLimitExceeded {
		t.Fatalf("discovery over the limit: code %d", e.Code)
	}
}
