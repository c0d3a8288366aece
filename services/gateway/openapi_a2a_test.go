package gateway_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// driveA2ARoutes calls every route of the A2A endpoint once with success and
// checks each answer against the OpenAPI document. The agent has a runtime
// (token) that works its tasks over HTTP: pull claims the next one.
func driveA2ARoutes(t *testing.T, o *openAPI, p *meshtest.Platform, agentID, token string, pull func() mesh.TaskRun, receiver string) {
	t.Helper()
	call := func(r meshtest.Request) *meshtest.Response {
		t.Helper()
		resp := p.Send(t, r)
		o.check(r.Method, r.Path, resp)
		return resp
	}
	base := "/a2a/" + agentID
	var key meshapi.CreateA2AKeyResponse
	call(meshtest.Request{Method: http.MethodPost, Path: base + "/api-keys", Owner: true, JSON: map[string]any{"name": "documented"}}).Expect(t, http.StatusCreated).Decode(t, &key)
	call(meshtest.Request{Method: http.MethodGet, Path: base + "/api-keys", Owner: true}).Expect(t, http.StatusOK)
	spare := meshapi.CreateA2AKeyResponse{}
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: base + "/api-keys", Owner: true}).Decode(t, &spare)
	call(meshtest.Request{Method: http.MethodDelete, Path: base + "/api-keys/" + spare.KeyID, Owner: true}).Expect(t, http.StatusNoContent)

	a2a := func(method, path, version string, body any) *meshtest.Response {
		t.Helper()
		h := http.Header{"X-Api-Key": {key.APIKey}}
		if version != "" {
			h.Set("A2A-Version", version)
		}
		return call(meshtest.Request{Method: method, Path: path, Header: h, JSON: body}).Expect(t, http.StatusOK)
	}
	stream := func(method, path, version string, body any) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var rd *strings.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = strings.NewReader(string(b))
		} else {
			rd = strings.NewReader("")
		}
		req, _ := http.NewRequestWithContext(ctx, method, p.APIBase+path, rd)
		req.Header.Set("X-API-Key", key.APIKey)
		req.Header.Set("Content-Type", "application/json")
		if version != "" {
			req.Header.Set("A2A-Version", version)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
		}
		o.check(method, path, &meshtest.Response{Status: resp.StatusCode, Header: resp.Header})
	}

	call(meshtest.Request{Method: http.MethodGet, Path: base + "/.well-known/agent-card.json"}).Expect(t, http.StatusOK)
	call(meshtest.Request{Method: http.MethodGet, Path: base + "/agent-card"}).Expect(t, http.StatusOK)
	rpc := func(path, version, method string) {
		a2a(http.MethodPost, path, version, map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": map[string]any{}})
	}
	rpc(base, "1.0", "GetExtendedAgentCard")
	rpc(base+"/", "", "agent/getAuthenticatedExtendedCard")

	// 0.3's HTTP+JSON is the proto JSON of 0.3, whose messages hold "content".
	for _, v := range []struct{ prefix, version, parts string }{{base, "1.0", "parts"}, {base + "/v1", "0.3", "content"}} {
		send := func() string {
			var task struct {
				Task struct {
					ID string `json:"id"`
				} `json:"task"`
			}
			a2a(http.MethodPost, v.prefix+"/message:send", v.version, map[string]any{
				"message":       map[string]any{"messageId": mesh.NewID(), "role": "ROLE_USER", v.parts: []any{map[string]any{"text": "documented"}}},
				"configuration": map[string]any{"returnImmediately": true, "blocking": false},
			}).Decode(t, &task)
			if task.Task.ID == "" {
				t.Fatalf("send on %s answered no task", v.prefix)
			}
			return task.Task.ID
		}
		id := send()
		a2a(http.MethodGet, v.prefix+"/tasks", v.version, nil)
		a2a(http.MethodGet, v.prefix+"/tasks/"+id, v.version, nil)
		pushBody := map[string]any{"id": "doc", "url": receiver}
		if v.version == "0.3" {
			pushBody = map[string]any{"configId": "doc", "config": map[string]any{"pushNotificationConfig": map[string]any{"id": "doc", "url": receiver}}}
		}
		a2a(http.MethodPost, v.prefix+"/tasks/"+id+"/pushNotificationConfigs", v.version, pushBody)
		a2a(http.MethodGet, v.prefix+"/tasks/"+id+"/pushNotificationConfigs", v.version, nil)
		a2a(http.MethodGet, v.prefix+"/tasks/"+id+"/pushNotificationConfigs/doc", v.version, nil)
		h := http.Header{"X-Api-Key": {key.APIKey}}
		if v.version != "" {
			h.Set("A2A-Version", v.version)
		}
		del := call(meshtest.Request{Method: http.MethodDelete, Path: v.prefix + "/tasks/" + id + "/pushNotificationConfigs/doc", Header: h})
		if del.Status != http.StatusOK && del.Status != http.StatusNoContent {
			t.Fatalf("delete push config: %d %s", del.Status, del.Body)
		}
		stream(http.MethodGet, v.prefix+"/tasks/"+id+":subscribe", v.version, nil)
		stream(http.MethodPost, v.prefix+"/tasks/"+id+":subscribe", v.version, nil)
		a2a(http.MethodPost, v.prefix+"/tasks/"+id+":cancel", v.version, nil)
		stream(http.MethodPost, v.prefix+"/message:stream", v.version, map[string]any{
			"message": map[string]any{"messageId": mesh.NewID(), "role": "ROLE_USER", v.parts: []any{map[string]any{"text": "streamed"}}}})
	}
	a2a(http.MethodGet, base+"/extendedAgentCard", "1.0", nil)
	a2a(http.MethodGet, base+"/v1/card", "", nil)

	// A task whose runtime delivers a file, and one that came with a file:
	// the download routes of each.
	for {
		// The streamed tasks above are pending: the runtime works through them.
		var l meshapi.TaskRunList
		p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?status=pending&agent_id=" + agentID, Owner: true}).Expect(t, http.StatusOK).Decode(t, &l)
		if len(l.TaskRuns) == 0 {
			break
		}
		run := pull()
		p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + run.ID + "/complete", RuntimeToken: token, JSON: map[string]any{"output": map[string]any{"text": "ok"}}}).Expect(t, http.StatusOK)
	}
	var sent struct {
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
	}
	a2a(http.MethodPost, base+"/message:send", "1.0", map[string]any{"configuration": map[string]any{"returnImmediately": true},
		"message": map[string]any{"messageId": mesh.NewID(), "role": "ROLE_USER", "parts": []any{
			map[string]any{"text": "with a file"}, map[string]any{"raw": base64.StdEncoding.EncodeToString([]byte("input file")), "filename": "in.txt", "mediaType": "text/plain"}}}}).Decode(t, &sent)
	run := pull()
	if run.ID != sent.Task.ID {
		t.Fatalf("pulled %s, sent %s", run.ID, sent.Task.ID)
	}
	var in struct {
		Attachments []struct {
			ArtifactID string `json:"artifact_id"`
		} `json:"attachments"`
	}
	_ = json.Unmarshal(run.Input, &in)
	if len(in.Attachments) != 1 {
		t.Fatalf("input %s", run.Input)
	}
	call(meshtest.Request{Method: http.MethodGet, Path: "/agent-runtimes/runtime/artifacts/" + in.Attachments[0].ArtifactID + "/content", RuntimeToken: token}).Expect(t, http.StatusOK)
	var up struct {
		Artifact mesh.Artifact `json:"artifact"`
	}
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + run.ID + "/artifacts", RuntimeToken: token, JSON: map[string]any{"filename": "out.txt", "content_text": "output file"}}).Expect(t, http.StatusCreated).Decode(t, &up)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + run.ID + "/complete", RuntimeToken: token,
		JSON: map[string]any{"output": map[string]any{"text": "Which one?"}, "input_required": true}}).Expect(t, http.StatusOK)
	if got := p.GetTask(run.ID); got.Status != mesh.StatusInputRequired {
		t.Fatalf("complete with input_required left the run %s", got.Status)
	}
	call(meshtest.Request{Method: http.MethodGet, Path: base + "/artifacts/" + up.Artifact.ID, Header: http.Header{"X-Api-Key": {key.APIKey}}}).Expect(t, http.StatusOK)
}
