package a2aserver_test

// The SDK behaviours wire.go rewrites, shown on the SDK's own transports
// (no endpoint, no wire writer in front). Each test asserts the SDK still
// does what the rewrite corrects: when one fails, that SDK behaviour is
// fixed and its rewrite in wire.go can go.

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// sdkStub answers the few methods these tests call; the embedded nil
// interface panics on any other, which would be a test mistake.
type sdkStub struct {
	a2asrv.RequestHandler
	created *a2a.PushConfig
}

func (*sdkStub) GetTask(context.Context, *a2a.GetTaskRequest) (*a2a.Task, error) {
	return nil, a2a.ErrTaskNotFound
}

func (*sdkStub) CancelTask(context.Context, *a2a.CancelTaskRequest) (*a2a.Task, error) {
	return nil, a2a.ErrTaskNotCancelable
}

func (*sdkStub) SendMessage(context.Context, *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	return nil, a2a.ErrUnsupportedContentType
}

func (*sdkStub) SubscribeToTask(context.Context, *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) { yield(nil, a2a.ErrUnsupportedOperation) }
}

func (*sdkStub) DeleteTaskPushConfig(context.Context, *a2a.DeleteTaskPushConfigRequest) error {
	return nil
}

func (*sdkStub) ListTaskPushConfigs(context.Context, *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	return &a2a.ListTaskPushConfigResponse{}, nil
}

func (s *sdkStub) CreateTaskPushConfig(_ context.Context, c *a2a.PushConfig) (*a2a.PushConfig, error) {
	s.created = c
	return c, nil
}

// sdkTransports are the SDK's four transports over one stub.
type sdkTransports struct {
	stub                         *sdkStub
	rpc10, rpc03, rest10, rest03 http.Handler
}

func newSDKTransports() *sdkTransports {
	s := &sdkStub{}
	return &sdkTransports{
		stub:   s,
		rpc10:  a2asrv.NewJSONRPCHandler(s),
		rpc03:  a2av0.NewJSONRPCHandler(s),
		rest10: a2asrv.NewRESTHandler(s),
		rest03: a2av0.NewRESTHandler(s),
	}
}

func serveSDK(h http.Handler, method, path, body string, header map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	for k, v := range header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// rpcSDK sends one JSON-RPC call and returns the response's members.
func rpcSDK(t *testing.T, h http.Handler, method string, params any) (map[string]json.RawMessage, *httptest.ResponseRecorder) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	w := serveSDK(h, http.MethodPost, "/", string(body), map[string]string{"Content-Type": "application/json"})
	var resp map[string]json.RawMessage
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		t.Fatalf("%s: %v: %s", method, err, w.Body)
	}
	return resp, w
}

// The 0.3 JSON-RPC transport writes error data as 1.0's typed array (0.3
// §6.12 has an object), and leaves the error's Content-Type unset.
func TestSDK_RPC03ErrorDataIsAnArrayWithoutContentType(t *testing.T) {
	sdk := newSDKTransports()
	resp, w := rpcSDK(t, sdk.rpc03, "tasks/get", map[string]any{"id": "t1"})
	var e struct {
		Code int             `json:"code"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(resp["error"], &e); err != nil || e.Code != -32001 {
		t.Fatalf("tasks/get of an unknown task: %s", w.Body)
	}
	if !strings.HasPrefix(string(e.Data), "[") {
		t.Errorf("0.3 error data = %s: no longer an array, the rewrite to an object can go", e.Data)
	}
	// Unset, net/http (and the recorder) label the body by sniffing it.
	if ct := w.Header().Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		t.Errorf("0.3 JSON-RPC error Content-Type = %q: now set, defaulting it can go", ct)
	}
}

// Both JSON-RPC transports answer a method without a result (deleting a
// push configuration) with no result member, which JSON-RPC 2.0 §5 forbids.
func TestSDK_RPCDeleteAnswersWithoutResult(t *testing.T) {
	sdk := newSDKTransports()
	for _, c := range []struct {
		version string
		h       http.Handler
		method  string
		params  map[string]any
	}{
		{"1.0", sdk.rpc10, "DeleteTaskPushNotificationConfig", map[string]any{"taskId": "t1", "id": "c1"}},
		{"0.3", sdk.rpc03, "tasks/pushNotificationConfig/delete", map[string]any{"id": "t1", "pushNotificationConfigId": "c1"}},
	} {
		resp, w := rpcSDK(t, c.h, c.method, c.params)
		if resp["error"] != nil {
			t.Errorf("%s %s: %s", c.version, c.method, w.Body)
			continue
		}
		if _, ok := resp["result"]; ok {
			t.Errorf("%s %s = %s: has a result now, adding one can go", c.version, c.method, w.Body)
		}
	}
}

// The 0.3 JSON-RPC transport lists no push configurations as a null
// result; 0.3 §7.7 returns an array.
func TestSDK_RPC03EmptyPushConfigListIsNull(t *testing.T) {
	sdk := newSDKTransports()
	resp, w := rpcSDK(t, sdk.rpc03, "tasks/pushNotificationConfig/list", map[string]any{"id": "t1"})
	if string(resp["result"]) != "null" {
		t.Errorf("0.3 empty list = %s: no longer null, turning null into [] can go", w.Body)
	}
}

// Both JSON-RPC transports call params they cannot decode (a part of an
// unknown kind, in valid JSON) a parse error, -32700, where JSON-RPC 2.0
// §5.1 keeps that code for invalid JSON and gives -32602 to invalid params.
func TestSDK_RPCUndecodableParamsAreParseError(t *testing.T) {
	sdk := newSDKTransports()
	for _, c := range []struct {
		version string
		h       http.Handler
		method  string
		message map[string]any
	}{
		{"1.0", sdk.rpc10, "SendMessage", map[string]any{"messageId": "m1", "role": "ROLE_USER", "parts": []any{map[string]any{"video": map[string]any{"frames": 3}}}}},
		{"0.3", sdk.rpc03, "message/send", map[string]any{"kind": "message", "messageId": "m1", "role": "user", "parts": []any{map[string]any{"kind": "video", "frames": 3}}}},
	} {
		resp, w := rpcSDK(t, c.h, c.method, map[string]any{"message": c.message})
		var e struct {
			Code int `json:"code"`
		}
		if err := json.Unmarshal(resp["error"], &e); err != nil {
			t.Errorf("%s %s: no error: %s", c.version, c.method, w.Body)
			continue
		}
		if e.Code != -32700 {
			t.Errorf("%s %s: error %d: no longer -32700, turning it into -32602 can go", c.version, c.method, e.Code)
		}
	}
}

// The 0.3 REST transport labels errors application/problem+json, which its
// own client does not take (0.3 §3.2.3: application/json for every body).
func TestSDK_REST03ErrorIsProblemJSON(t *testing.T) {
	sdk := newSDKTransports()
	w := serveSDK(sdk.rest03, http.MethodGet, "/v1/tasks/t1", "", nil)
	if w.Code != http.StatusNotFound {
		t.Fatalf("0.3 REST get of an unknown task: %d %s", w.Code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("0.3 REST error Content-Type = %q: no longer problem+json, relabelling it can go", ct)
	}
}

// The 1.0 REST transport answers some errors with other statuses than spec
// 1.0 §5.4 gives them (its own table, 400 for all of these).
func TestSDK_RESTStatusesDifferFromTheSpec(t *testing.T) {
	sdk := newSDKTransports()
	for _, c := range []struct {
		name, method, path, body string
		spec                     int
	}{
		{"TaskNotCancelable", http.MethodPost, "/tasks/t1:cancel", "", http.StatusConflict},
		{"ContentTypeNotSupported", http.MethodPost, "/message:send",
			`{"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}`, http.StatusUnsupportedMediaType},
	} {
		w := serveSDK(sdk.rest10, c.method, c.path, c.body, map[string]string{"Content-Type": "application/json"})
		if w.Code == c.spec {
			t.Errorf("%s: %d, the spec's status: setting it from the reason can go for this error", c.name, w.Code)
		}
		if w.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want the SDK's 400", c.name, w.Code, w.Body)
		}
	}
}

// The REST transports start an event stream (200) before its first event,
// so an error raised before any event is an error event in a 200 stream;
// the HTTP+JSON binding (spec 1.0 §11.7) answers it with its HTTP status.
func TestSDK_RESTStreamOpensBeforeItsError(t *testing.T) {
	sdk := newSDKTransports()
	for _, c := range []struct {
		version string
		h       http.Handler
		path    string
	}{
		{"1.0", sdk.rest10, "/tasks/t1:subscribe"},
		{"0.3", sdk.rest03, "/v1/tasks/t1:subscribe"},
	} {
		w := serveSDK(c.h, http.MethodPost, c.path, "", map[string]string{"Accept": "text/event-stream"})
		if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			t.Errorf("%s subscribe with an error: %d %s %s: no longer a 200 stream, holding REST streams can go",
				c.version, w.Code, w.Header().Get("Content-Type"), w.Body)
			continue
		}
		if !strings.Contains(w.Body.String(), "data:") || !strings.Contains(w.Body.String(), `"error"`) {
			t.Errorf("%s subscribe: stream %q holds no error event", c.version, w.Body)
		}
	}
}

// The 0.3 REST transport decodes a push configuration's creation as the
// whole CreateTaskPushNotificationConfigRequest, where the 0.3 proto binds
// the route with body: "config" (a TaskPushNotificationConfig, as the
// JavaScript client sends): such a body's URL never reaches the handler.
func TestSDK_REST03PushCreateIgnoresTheProtoBody(t *testing.T) {
	sdk := newSDKTransports()
	body := `{"name": "tasks/t1/pushNotificationConfigs/c1", "pushNotificationConfig": {"id": "c1", "url": "https://hooks.example/a2a"}}`
	w := serveSDK(sdk.rest03, http.MethodPost, "/v1/tasks/t1/pushNotificationConfigs", body, map[string]string{"Content-Type": "application/json"})
	if c := sdk.stub.created; c != nil && c.URL == "https://hooks.example/a2a" {
		t.Errorf("0.3 REST create took the proto body (%d %s): wrapping it can go", w.Code, w.Body)
	}
}
