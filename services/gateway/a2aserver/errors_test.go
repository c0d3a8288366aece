package a2aserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// checkRPCError asserts a JSON-RPC error's code and its version's shape:
// 0.3 data is an object with the reason, 1.0 data is an array holding a
// google.rpc.ErrorInfo with the reason in the a2a-protocol.org domain.
func checkRPCError(t *testing.T, name, version string, a *answer, code int, reason string) {
	t.Helper()
	e := rpcError(t, a)
	if got := int(e["code"].(float64)); got != code {
		t.Errorf("%s (%s): code %d, want %d: %s", name, version, got, code, a.body)
	}
	if m, _ := e["message"].(string); m == "" {
		t.Errorf("%s (%s): no message", name, version)
	}
	if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s (%s): Content-Type %q", name, version, ct)
	}
	switch version {
	case "1.0":
		data, ok := e["data"].([]any)
		if !ok || len(data) == 0 {
			t.Fatalf("%s (1.0): data is not an array: %s", name, a.body)
		}
		info := data[len(data)-1].(map[string]any)
		if info["@type"] != "type.googleapis.com/google.rpc.ErrorInfo" || info["reason"] != reason || info["domain"] != "a2a-protocol.org" {
			t.Errorf("%s (1.0): error info %v, want reason %s", name, info, reason)
		}
	default:
		data, ok := e["data"].(map[string]any)
		if !ok {
			t.Fatalf("%s (0.3): data is not an object: %s", name, a.body)
		}
		if data["reason"] != reason {
			t.Errorf("%s (0.3): data %v, want reason %s", name, data, reason)
		}
	}
}

// TestErrors_EveryCodeInBothVersions sends requests that must fail, over
// JSON-RPC in both versions, and checks each error's code and shape.
func TestErrors_EveryCodeInBothVersions(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{})
	path := "/a2a/" + d.agent.Agent.ID
	done := d.p.CreateTask(d.agent.Agent.ID, "finished")
	d.p.WaitTask(done.ID, 20*time.Second, meshtest.StatusIs(mesh.StatusCompleted))

	// A task the key made, finished, for cancel and follow-up messages.
	var finished string
	for _, version := range []string{"1.0", "0.3"} {
		send := map[string]string{"1.0": "SendMessage", "0.3": "message/send"}[version]
		msg := map[string]any{"messageId": mesh.NewID(), "role": map[string]string{"1.0": "ROLE_USER", "0.3": "user"}[version],
			"parts": []any{map[string]any{"1.0": map[string]any{"text": "hi"}, "0.3": map[string]any{"kind": "text", "text": "hi"}}[version]}}
		res := d.rpc(version, send, map[string]any{"message": msg}).json(t)
		task, _ := res["result"].(map[string]any)
		if version == "1.0" {
			task, _ = task["task"].(map[string]any)
		}
		if task == nil {
			t.Fatalf("%s send: %v", version, res)
		}
		finished = task["id"].(string)
		get := map[string]string{"1.0": "GetTask", "0.3": "tasks/get"}[version]
		cancel := map[string]string{"1.0": "CancelTask", "0.3": "tasks/cancel"}[version]
		pushSet := map[string]string{"1.0": "CreateTaskPushNotificationConfig", "0.3": "tasks/pushNotificationConfig/set"}[version]

		for _, c := range []struct {
			name   string
			a      *answer
			code   int
			reason string
		}{
			{"invalid JSON", d.do(raw{method: http.MethodPost, path: path, header: map[string]string{"X-API-Key": d.key, "A2A-Version": version}, body: `{"jsonrpc": "2.0", "id": 1,`}), -32700, "PARSE_ERROR"},
			{"not an object", d.do(raw{method: http.MethodPost, path: path, header: map[string]string{"X-API-Key": d.key, "A2A-Version": version}, body: `[1, 2]`}), -32600, "INVALID_REQUEST"},
			{"wrong jsonrpc", d.do(raw{method: http.MethodPost, path: path, header: map[string]string{"X-API-Key": d.key, "A2A-Version": version}, body: `{"jsonrpc": "1.0", "id": 1, "method": "` + get + `", "params": {}}`}), -32600, "INVALID_REQUEST"},
			{"unknown method", d.rpc(version, "tasks/explode", map[string]any{}), -32601, "METHOD_NOT_FOUND"},
			{"the other version's method", d.rpc(version, map[string]string{"1.0": "tasks/get", "0.3": "GetTask"}[version], map[string]any{"id": finished}), -32601, "METHOD_NOT_FOUND"},
			{"params of the wrong type", d.rpc(version, get, map[string]any{"id": 42}), -32602, "INVALID_PARAMS"},
			{"missing params", d.do(raw{method: http.MethodPost, path: path, header: map[string]string{"X-API-Key": d.key, "A2A-Version": version}, body: `{"jsonrpc": "2.0", "id": 1, "method": "` + get + `"}`}), -32602, "INVALID_PARAMS"},
			{"message without parts", d.rpc(version, send, map[string]any{"message": map[string]any{"messageId": "m", "role": msg["role"], "parts": []any{}}}), -32602, "INVALID_PARAMS"},
			{"unknown task", d.rpc(version, get, map[string]any{"id": mesh.NewID()}), -32001, "TASK_NOT_FOUND"},
			{"a task of another endpoint", d.rpc(version, get, map[string]any{"id": done.ID}), -32001, "TASK_NOT_FOUND"},
			{"cancel a finished task", d.rpc(version, cancel, map[string]any{"id": finished}), -32002, "TASK_NOT_CANCELABLE"},
			{"message to a finished task", d.rpc(version, send, map[string]any{"message": withTask(msg, finished)}), -32004, "UNSUPPORTED_OPERATION"},
			{"no acceptable output mode", d.rpc(version, send, map[string]any{"message": msg, "configuration": map[string]any{"acceptedOutputModes": []string{"image/png"}}}), -32005, "CONTENT_TYPE_NOT_SUPPORTED"},
			{"unknown context", d.rpc(version, send, map[string]any{"message": withContext(msg, mesh.NewID())}), -32602, "INVALID_PARAMS"},
		} {
			checkRPCError(t, c.name, version, c.a, c.code, c.reason)
		}
		ct := d.do(raw{method: http.MethodPost, path: path, header: map[string]string{"X-API-Key": d.key, "A2A-Version": version, "Content-Type": "text/plain"},
			body: `{"jsonrpc": "2.0", "id": 1, "method": "` + get + `", "params": {"id": "x"}}`})
		if ct.status != http.StatusUnsupportedMediaType {
			t.Errorf("%s: a text/plain body answered %d", version, ct.status)
		}
		checkRPCError(t, "text/plain body", version, ct, -32005, "CONTENT_TYPE_NOT_SUPPORTED")
		_ = pushSet
	}
	unsupported := d.rpc("2.0", "SendMessage", map[string]any{})
	checkRPCError(t, "A2A-Version 2.0", "1.0", unsupported, -32009, "VERSION_NOT_SUPPORTED")
	if rpcError(t, unsupported)["code"] == nil || unsupported.json(t)["id"] != float64(7) {
		t.Errorf("the version error lost the request id: %s", unsupported.body)
	}
}

func withTask(msg map[string]any, taskID string) map[string]any {
	out := map[string]any{}
	for k, v := range msg {
		out[k] = v
	}
	out["messageId"] = mesh.NewID()
	out["taskId"] = taskID
	return out
}

func withContext(msg map[string]any, contextID string) map[string]any {
	out := withTask(msg, "")
	delete(out, "taskId")
	out["contextId"] = contextID
	return out
}

// TestErrors_PushNotSupportedWhenTurnedOff: an operator who turns push off
// gets a card that says so and PushNotificationNotSupported from the
// methods, in both versions.
func TestErrors_PushNotSupportedWhenTurnedOff(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{platform: func(c *platform.Config) { c.A2ADisablePush = true }})
	card := d.do(raw{method: http.MethodGet, path: "/a2a/" + d.agent.Agent.ID + "/.well-known/agent-card.json"}).json(t)
	if card["capabilities"].(map[string]any)["pushNotifications"] == true {
		t.Errorf("the card offers push notifications: %v", card["capabilities"])
	}
	for version, method := range map[string]string{"1.0": "CreateTaskPushNotificationConfig", "0.3": "tasks/pushNotificationConfig/set"} {
		params := map[string]any{"taskId": mesh.NewID(), "url": "https://example.com/hook"}
		if version == "0.3" {
			params = map[string]any{"taskId": mesh.NewID(), "pushNotificationConfig": map[string]any{"url": "https://example.com/hook"}}
		}
		checkRPCError(t, "push turned off", version, d.rpc(version, method, params), -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED")
	}
}

// TestErrors_RESTStatusesFollowTheSpecification: HTTP+JSON errors carry
// spec 1.0 §5.4's HTTP status and the AIP-193 body with an ErrorInfo.
func TestErrors_RESTStatusesFollowTheSpecification(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{})
	base := "/a2a/" + d.agent.Agent.ID
	h := map[string]string{"X-API-Key": d.key, "A2A-Version": "1.0"}
	send := d.do(raw{method: http.MethodPost, path: base + "/message:send", header: h,
		body: `{"message": {"messageId": "` + mesh.NewID() + `", "role": "ROLE_USER", "parts": [{"text": "rest"}]}}`})
	if send.status != http.StatusOK {
		t.Fatalf("send: %d %s", send.status, send.body)
	}
	taskID := send.json(t)["task"].(map[string]any)["id"].(string)
	for _, c := range []struct {
		name   string
		r      raw
		status int
		reason string
	}{
		{"unknown task", raw{method: http.MethodGet, path: base + "/tasks/" + mesh.NewID(), header: h}, 404, "TASK_NOT_FOUND"},
		{"not cancelable", raw{method: http.MethodPost, path: base + "/tasks/" + taskID + ":cancel", header: h}, 409, "TASK_NOT_CANCELABLE"},
		{"bad JSON", raw{method: http.MethodPost, path: base + "/message:send", header: h, body: `{"message":`}, 400, "PARSE_ERROR"},
		{"content type", raw{method: http.MethodPost, path: base + "/message:send", header: map[string]string{"X-API-Key": d.key, "A2A-Version": "1.0", "Content-Type": "text/plain"}, body: `{}`}, 415, "CONTENT_TYPE_NOT_SUPPORTED"},
		{"version of the other binding", raw{method: http.MethodGet, path: base + "/tasks/" + taskID, header: map[string]string{"X-API-Key": d.key, "A2A-Version": "0.3"}}, 400, "VERSION_NOT_SUPPORTED"},
		{"no version on a 1.0 path", raw{method: http.MethodGet, path: base + "/tasks/" + taskID, header: map[string]string{"X-API-Key": d.key}}, 400, "VERSION_NOT_SUPPORTED"},
		{"0.3 unknown task", raw{method: http.MethodGet, path: base + "/v1/tasks/" + mesh.NewID(), header: map[string]string{"X-API-Key": d.key}}, 404, "TASK_NOT_FOUND"},
		{"0.3 not cancelable", raw{method: http.MethodPost, path: base + "/v1/tasks/" + taskID + ":cancel", header: map[string]string{"X-API-Key": d.key}}, 409, "TASK_NOT_CANCELABLE"},
		{"no credential", raw{method: http.MethodGet, path: base + "/tasks/" + taskID, header: map[string]string{"A2A-Version": "1.0"}}, 401, "UNAUTHENTICATED"},
	} {
		a := d.do(c.r)
		if a.status != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, a.status, c.status, a.body)
			continue
		}
		if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("%s: Content-Type %q", c.name, ct)
		}
		var body struct {
			Error struct {
				Code    int    `json:"code"`
				Status  string `json:"status"`
				Message string `json:"message"`
				Details []map[string]any
			} `json:"error"`
		}
		if err := json.Unmarshal(a.body, &body); err != nil || body.Error.Code != c.status || body.Error.Message == "" {
			t.Errorf("%s: body %s", c.name, a.body)
			continue
		}
		found := false
		for _, dt := range body.Error.Details {
			found = found || (dt["@type"] == "type.googleapis.com/google.rpc.ErrorInfo" && dt["reason"] == c.reason)
		}
		if !found {
			t.Errorf("%s: no ErrorInfo %s in %s", c.name, c.reason, a.body)
		}
	}
}

// TestVersions_NegotiationAndRoutes: one URL serves both versions, chosen by
// A2A-Version (header or query parameter; empty is 0.3), with and without a
// trailing slash; subscribe works by GET and POST.
func TestVersions_NegotiationAndRoutes(t *testing.T) {
	t.Parallel()
	host := newScripted()
	d := startEndpoint(t, endpointOptions{agent: meshtest.AgentOptions{Provider: host}})
	base := "/a2a/" + d.agent.Agent.ID
	id := mesh.NewID()
	for _, c := range []struct {
		name, path, method string
		header             map[string]string
		wantCode           int
	}{
		// An unknown task answers TaskNotFound in the version asked for, so
		// the code says which method set served the request.
		{"1.0 by header", base, "GetTask", map[string]string{"A2A-Version": "1.0"}, -32001},
		{"1.0 by header, patch version ignored", base, "GetTask", map[string]string{"A2A-Version": "1.0.1"}, -32001},
		{"1.0 by query parameter", base + "?A2A-Version=1.0", "GetTask", nil, -32001},
		{"1.0 with a trailing slash", base + "/", "GetTask", map[string]string{"A2A-Version": "1.0"}, -32001},
		{"0.3 by header", base, "tasks/get", map[string]string{"A2A-Version": "0.3"}, -32001},
		{"0.3 without a version", base, "tasks/get", nil, -32001},
		{"0.3 with a trailing slash", base + "/", "tasks/get", nil, -32001},
		{"no version is 0.3", base, "GetTask", nil, -32601},
		{"0.3 asked for, 1.0 method", base, "GetTask", map[string]string{"A2A-Version": "0.3"}, -32601},
		{"unsupported version", base, "GetTask", map[string]string{"A2A-Version": "0.2"}, -32009},
	} {
		h := map[string]string{"X-API-Key": d.key}
		for k, v := range c.header {
			h[k] = v
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "x", "method": c.method, "params": map[string]any{"id": id}})
		a := d.do(raw{method: http.MethodPost, path: c.path, header: h, body: string(b)})
		if code := int(rpcError(t, a)["code"].(float64)); code != c.wantCode {
			t.Errorf("%s: code %d, want %d: %s", c.name, code, c.wantCode, a.body)
		}
	}

	// Subscribe by GET and by POST, on both REST versions: the task first
	// (its current state), then its events until it ends.
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, base + "/tasks/%s:subscribe"},
		{http.MethodPost, base + "/tasks/%s:subscribe"},
		{http.MethodGet, base + "/v1/tasks/%s:subscribe"},
		{http.MethodPost, base + "/v1/tasks/%s:subscribe"},
	} {
		run := d.rpc("1.0", "SendMessage", map[string]any{"message": map[string]any{"messageId": mesh.NewID(), "role": "ROLE_USER", "parts": []any{map[string]any{"text": "wait subscribe"}}},
			"configuration": map[string]any{"returnImmediately": true}}).json(t)
		taskID := run["result"].(map[string]any)["task"].(map[string]any)["id"].(string)
		version := "1.0"
		if strings.Contains(c.path, "/v1/") {
			version = ""
		}
		events := make(chan string, 64)
		go d.sse(c.method, fmt.Sprintf(c.path, taskID), version, events)
		first := <-events
		if !strings.Contains(first, taskID) || !strings.Contains(strings.ToLower(first), "working") && !strings.Contains(strings.ToLower(first), "submitted") {
			t.Fatalf("%s %s: first event %s", c.method, c.path, first)
		}
		host.gate <- struct{}{}
		var last string
		for ev := range events {
			last = ev
		}
		if !strings.Contains(strings.ToLower(last), "completed") {
			t.Errorf("%s %s: last event %s", c.method, c.path, last)
		}
	}
}
