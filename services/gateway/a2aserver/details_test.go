package a2aserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// finishedTask sends one message through the official 1.0 client and
// returns the id of the completed task.
func (d *endpoint) finishedTask(t *testing.T) a2a.TaskID {
	t.Helper()
	c := d.client("1.0", a2a.TransportProtocolJSONRPC)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("finish")})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("task %s is %s, want completed", task.ID, task.Status.State)
	}
	return task.ID
}

// rawFields decodes a JSON-RPC answer keeping each member's raw JSON, so a
// missing member and a null one differ.
func rawFields(t *testing.T, a *answer) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("answer %d is not a JSON object: %s", a.status, a.body)
	}
	return m
}

// TestPush_DeleteAnswersAResultAndIsIdempotent: deleting a push
// configuration answers a JSON-RPC result (0.3: null, 1.0: {}), and deleting
// it again succeeds the same way (1.0 §3.1.10), over JSON-RPC of both
// versions, REST, and the official Go client.
func TestPush_DeleteAnswersAResultAndIsIdempotent(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{platform: func(c *platform.Config) { c.AllowPrivateWebhooks = true }})
	taskID := d.finishedTask(t)
	rc := newReceiver(t, 0)
	set := func(id string) {
		t.Helper()
		res := d.rpc("0.3", "tasks/pushNotificationConfig/set", map[string]any{"taskId": taskID,
			"pushNotificationConfig": map[string]any{"id": id, "url": rc.srv.URL + "/hook"}})
		if _, ok := rawFields(t, res)["result"]; !ok {
			t.Fatalf("set %s: %s", id, res.body)
		}
	}
	for _, c := range []struct {
		version, method string
		want            string
	}{
		{"1.0", "DeleteTaskPushNotificationConfig", `{}`},
		{"0.3", "tasks/pushNotificationConfig/delete", `null`},
	} {
		id := "del-" + strings.ReplaceAll(c.version, ".", "")
		set(id)
		params := map[string]any{"taskId": taskID, "id": id}
		if c.version == "0.3" {
			params = map[string]any{"id": taskID, "pushNotificationConfigId": id}
		}
		for attempt := 1; attempt <= 2; attempt++ {
			a := d.rpc(c.version, c.method, params)
			m := rawFields(t, a)
			res, ok := m["result"]
			if a.status != http.StatusOK || !ok || string(res) != c.want || m["error"] != nil {
				t.Errorf("%s delete (attempt %d): %d %s, want result %s", c.version, attempt, a.status, a.body, c.want)
			}
		}
	}

	// REST, both versions, twice.
	base := "/a2a/" + d.agent.Agent.ID
	for _, c := range []struct{ prefix, version string }{{"", "1.0"}, {"/v1", "0.3"}} {
		id := "rest-" + strings.ReplaceAll(c.version, ".", "")
		set(id)
		for attempt := 1; attempt <= 2; attempt++ {
			a := d.do(raw{method: http.MethodDelete, path: base + c.prefix + "/tasks/" + string(taskID) + "/pushNotificationConfigs/" + id,
				header: map[string]string{"X-API-Key": d.key, "A2A-Version": c.version}})
			if a.status/100 != 2 {
				t.Errorf("REST %s delete (attempt %d): %d %s", c.version, attempt, a.status, a.body)
			}
		}
	}

	// The official client deletes twice without an error.
	set("go")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := d.client("1.0", a2a.TransportProtocolJSONRPC)
	for attempt := 1; attempt <= 2; attempt++ {
		if err := c.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: taskID, ID: "go"}); err != nil {
			t.Errorf("a2a-go delete (attempt %d): %v", attempt, err)
		}
	}
	list, err := c.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: taskID})
	if err != nil || len(list) != 0 {
		t.Errorf("after deleting every configuration the list is %v (%v)", list, err)
	}
	// A task that does not exist is still an error.
	a := d.rpc("1.0", "DeleteTaskPushNotificationConfig", map[string]any{"taskId": mesh.NewID(), "id": "x"})
	if e := rpcError(t, a); e["code"] != float64(-32001) {
		t.Errorf("delete on an unknown task: %s", a.body)
	}
}

// TestPush_03ListOfTaskWithoutConfigsIsAnEmptyArray: 0.3's
// tasks/pushNotificationConfig/list answers [] (not null) for a task without
// configurations, as 1.0's answers an empty configs list.
func TestPush_03ListOfTaskWithoutConfigsIsAnEmptyArray(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{})
	taskID := d.finishedTask(t)
	a := d.rpc("0.3", "tasks/pushNotificationConfig/list", map[string]any{"id": taskID})
	if res := rawFields(t, a)["result"]; string(res) != "[]" {
		t.Errorf("0.3 list: %s, want result []", a.body)
	}
	a = d.rpc("1.0", "ListTaskPushNotificationConfigs", map[string]any{"taskId": taskID})
	var v1 struct {
		Result map[string]json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(a.body, &v1); err != nil || v1.Result == nil {
		t.Fatalf("1.0 list: %s", a.body)
	}
	if c, ok := v1.Result["configs"]; ok && string(c) != "[]" {
		t.Errorf("1.0 list: %s, want no configs", a.body)
	}
}

// TestParts_UnknownKindIsInvalidParams: a message with a part of a kind the
// version does not define is valid JSON with invalid params: -32602, not
// -32700 Parse error, in both versions, sent and streamed.
func TestParts_UnknownKindIsInvalidParams(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{})
	for _, c := range []struct {
		version, method string
		message         map[string]any
	}{
		{"0.3", "message/send", map[string]any{"kind": "message", "messageId": mesh.NewID(), "role": "user", "parts": []any{map[string]any{"kind": "video", "frames": 3}}}},
		{"0.3", "message/stream", map[string]any{"kind": "message", "messageId": mesh.NewID(), "role": "user", "parts": []any{map[string]any{"kind": "video", "frames": 3}}}},
		{"1.0", "SendMessage", map[string]any{"messageId": mesh.NewID(), "role": "ROLE_USER", "parts": []any{map[string]any{"video": map[string]any{"frames": 3}}}}},
		{"1.0", "SendStreamingMessage", map[string]any{"messageId": mesh.NewID(), "role": "ROLE_USER", "parts": []any{map[string]any{"video": map[string]any{"frames": 3}}}}},
	} {
		a := d.rpc(c.version, c.method, map[string]any{"message": c.message})
		body := string(a.body)
		if strings.HasPrefix(a.header.Get("Content-Type"), "text/event-stream") {
			for _, line := range strings.Split(body, "\n") {
				if data, ok := strings.CutPrefix(line, "data: "); ok {
					body = data
					break
				}
			}
		}
		var res struct {
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &res); err != nil || res.Error == nil || res.Error.Code != -32602 {
			t.Errorf("%s %s with an unknown part: %s, want error -32602", c.version, c.method, a.body)
		}
	}
}

// TestREST_SubscribeToFinishedTaskIs400: the HTTP+JSON binding answers a
// subscription to a task in a final state with HTTP 400 and the binding's
// error body (UnsupportedOperation), not a 200 event stream holding an
// error; the official client sees the error.
func TestREST_SubscribeToFinishedTaskIs400(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{})
	taskID := d.finishedTask(t)
	base := "/a2a/" + d.agent.Agent.ID
	for _, c := range []struct{ method, path, version, reason string }{
		{http.MethodPost, base + "/tasks/" + string(taskID) + ":subscribe", "1.0", "UNSUPPORTED_OPERATION"},
		{http.MethodGet, base + "/tasks/" + string(taskID) + ":subscribe", "1.0", "UNSUPPORTED_OPERATION"},
		{http.MethodPost, base + "/v1/tasks/" + string(taskID) + ":subscribe", "0.3", "UNSUPPORTED_OPERATION"},
	} {
		a := d.do(raw{method: c.method, path: c.path, header: map[string]string{"X-API-Key": d.key, "A2A-Version": c.version, "Accept": "text/event-stream"}})
		if a.status != http.StatusBadRequest || !strings.HasPrefix(a.header.Get("Content-Type"), "application/json") {
			t.Errorf("%s %s: %d %s %s, want 400 with a JSON error", c.method, c.path, a.status, a.header.Get("Content-Type"), a.body)
			continue
		}
		var body struct {
			Error struct {
				Code    int              `json:"code"`
				Message string           `json:"message"`
				Details []map[string]any `json:"details"`
			} `json:"error"`
		}
		if err := json.Unmarshal(a.body, &body); err != nil || body.Error.Code != 400 || body.Error.Message == "" {
			t.Errorf("%s %s: body %s", c.method, c.path, a.body)
		}
		found := false
		for _, dt := range body.Error.Details {
			found = found || dt["reason"] == c.reason
		}
		if !found {
			t.Errorf("%s %s: no ErrorInfo %s in %s", c.method, c.path, c.reason, a.body)
		}
	}
	c := d.client("1.0", a2a.TransportProtocolHTTPJSON)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got error
	for _, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: taskID}) {
		if err != nil {
			got = err
			break
		}
	}
	if got == nil {
		t.Error("a2a-go subscribing over HTTP+JSON to a finished task saw no error")
	}
}

// TestCard_AgentWithoutSkillsHasADefaultSkill: an agent whose account lists
// no skills gets a card with one general skill (1.0: required arrays have at
// least one element), which the official client reads.
func TestCard_AgentWithoutSkillsHasADefaultSkill(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{agent: meshtest.AgentOptions{Name: "Plain agent"}})
	a := d.do(raw{method: http.MethodGet, path: "/a2a/" + d.agent.Agent.ID + "/.well-known/agent-card.json"})
	var card struct {
		Skills []struct {
			ID, Name, Description string
			Tags                  []string
		} `json:"skills"`
	}
	if err := json.Unmarshal(a.body, &card); err != nil {
		t.Fatal(err)
	}
	if len(card.Skills) != 1 || card.Skills[0].ID == "" || card.Skills[0].Name == "" || card.Skills[0].Description == "" || len(card.Skills[0].Tags) == 0 {
		t.Fatalf("card skills %+v, want one default skill with id, name, description and tags", card.Skills)
	}
	c := d.client("1.0", a2a.TransportProtocolJSONRPC)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ext, err := c.GetExtendedAgentCard(ctx, &a2a.GetExtendedAgentCardRequest{})
	if err != nil || len(ext.Skills) != 1 || ext.Skills[0].ID != card.Skills[0].ID {
		t.Fatalf("extended card skills: %+v (%v)", ext, err)
	}
}

// TestPush_03GetWithoutConfigIDAnswersTheOnlyConfig: 0.3's
// tasks/pushNotificationConfig/get takes the configuration id as optional
// (pushNotificationConfigId, or only the task's id as 0.2 clients send it):
// without one it answers the task's configuration when the task has exactly
// one; with none it is not found, with several the caller must name one.
func TestPush_03GetWithoutConfigIDAnswersTheOnlyConfig(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{platform: func(c *platform.Config) { c.AllowPrivateWebhooks = true }})
	taskID := d.finishedTask(t)
	rc := newReceiver(t, 0)
	get := func() *answer { return d.rpc("0.3", "tasks/pushNotificationConfig/get", map[string]any{"id": taskID}) }
	checkRPCError(t, "get without an id, no configuration", "0.3", get(), -32001, "TASK_NOT_FOUND")
	set := func(id string) {
		t.Helper()
		res := d.rpc("0.3", "tasks/pushNotificationConfig/set", map[string]any{"taskId": taskID,
			"pushNotificationConfig": map[string]any{"id": id, "url": rc.srv.URL + "/hook"}})
		if _, ok := rawFields(t, res)["result"]; !ok {
			t.Fatalf("set %s: %s", id, res.body)
		}
	}
	set("only")
	res, _ := get().json(t)["result"].(map[string]any)
	cfg, _ := res["pushNotificationConfig"].(map[string]any)
	if res["taskId"] != string(taskID) || cfg["id"] != "only" || cfg["url"] != rc.srv.URL+"/hook" {
		t.Errorf("get without an id, one configuration: %v", res)
	}
	set("second")
	checkRPCError(t, "get without an id, two configurations", "0.3", get(), -32602, "INVALID_PARAMS")
	named := d.rpc("0.3", "tasks/pushNotificationConfig/get", map[string]any{"id": taskID, "pushNotificationConfigId": "second"}).json(t)
	if res, _ := named["result"].(map[string]any); res == nil || res["pushNotificationConfig"].(map[string]any)["id"] != "second" {
		t.Errorf("get with an id: %v", named)
	}
}
