package a2aserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/errordetails"
)

// wireWriter sits between the SDK's transports and the client and corrects
// what the transports (a2a-go v2.4.0) get wrong about answer shapes, so each
// version's answers are exactly as its specification writes them. Each
// rewrite below names the SDK code it corrects, the rule that code breaks,
// and the test in wire_sdk_test.go that runs the SDK's own transport and
// asserts the behaviour is still there: when that test fails, the SDK is
// fixed and the rewrite can go.
//
//   - 0.3 error data (fixRPC03). The 0.3 JSON-RPC transport
//     (a2acompat/a2av0, jsonrpc_server.go) writes errors with the shared
//     internal/jsonrpc Error, whose data is 1.0's typed array
//     ([]*errordetails.Typed); a 0.3 error's data is an object (0.3 §6.12),
//     and the 0.3 Go client cannot decode an array there. The array becomes
//     an object, in plain answers and in SSE streams alike.
//     Test: TestSDK_RPC03ErrorDataIsAnArrayWithoutContentType.
//   - Missing result (fixRPCResult). internal/jsonrpc's ServerResponse
//     tags Result `json:"result,omitempty"`, so a method without a result
//     (deleting a push configuration) is answered with no result member,
//     which JSON-RPC 2.0 §5 forbids: it becomes null (0.3) or {} (1.0, an
//     empty message). Test: TestSDK_RPCDeleteAnswersWithoutResult.
//   - Null list (fixRPCResult). The 0.3 JSON-RPC transport's
//     tasks/pushNotificationConfig/list (onListTaskPushConfigs) returns
//     FromV1PushConfigs of no configurations, a nil slice, encoded as a
//     null result: it becomes [] (0.3 §7.7 returns an
//     array). Test: TestSDK_RPC03EmptyPushConfigListIsNull.
//   - Parse error for params (fixParseError). Both JSON-RPC transports wrap
//     any failure to decode params (a part of an unknown kind) in
//     a2a.ErrParseError, -32700, which JSON-RPC 2.0 §5.1 keeps for invalid
//     JSON. The endpoint has parsed the request before the transport sees
//     it, so the JSON was valid: it is -32602 invalid params.
//     Test: TestSDK_RPCUndecodableParamsAreParseError.
//   - Content-Type of errors (finish). The 0.3 JSON-RPC transport's
//     writeJSONRPCError sets no Content-Type (net/http then sniffs
//     text/plain), and its REST transport's writeRESTCompatError labels
//     errors application/problem+json, which its own client refuses (0.3
//     §3.2.3: application/json for every body); both become
//     application/json. Tests: TestSDK_RPC03ErrorDataIsAnArrayWithoutContentType,
//     TestSDK_REST03ErrorIsProblemJSON.
//   - REST statuses (fixREST). The REST transports map errors to statuses
//     with their own table (internal/rest, rest.go), which gives 400 to
//     TaskNotCancelable (spec 1.0 §5.4: 409), ContentTypeNotSupported (415)
//     and others; the status, and the code and status fields of the body,
//     are set from the error's reason (errorKinds).
//     Test: TestSDK_RESTStatusesDifferFromTheSpec.
//   - REST streams opening with an error (WriteHeader, release). The REST
//     transports start an event stream (HTTP 200) before they know whether
//     it has anything to say, so an error raised before the first event
//     (subscribing to a finished task) arrives as an error event. The
//     HTTP+JSON binding answers such an error with its HTTP status: a REST
//     stream is held until its first event, and one that opens with an
//     error becomes that error's plain answer.
//     Test: TestSDK_RESTStreamOpensBeforeItsError.
//
// One more correction is made to requests, not answers: fixPushCreate03
// (test: TestSDK_REST03PushCreateIgnoresTheProtoBody).
//
// Plain answers are buffered (they are small) and fixed when the transport
// is done; event streams pass through as they are written.
type wireWriter struct {
	w       http.ResponseWriter
	rpc03   bool // JSON-RPC 0.3
	rest    bool // REST (either version); otherwise JSON-RPC
	status  int
	buf     bytes.Buffer
	held    bool // a REST stream waiting for its first event
	stream  bool
	flushed bool
}

func newWireWriter(w http.ResponseWriter, rpc03, rest bool) *wireWriter {
	return &wireWriter{w: w, rpc03: rpc03, rest: rest, status: http.StatusOK}
}

// Header implements http.ResponseWriter.
func (ww *wireWriter) Header() http.Header { return ww.w.Header() }

func (ww *wireWriter) eventStream() bool {
	return strings.HasPrefix(ww.w.Header().Get("Content-Type"), "text/event-stream")
}

// WriteHeader starts an event stream at once (a REST one at its first
// event); other answers wait for finish.
func (ww *wireWriter) WriteHeader(status int) {
	if ww.stream || ww.flushed || ww.held {
		return
	}
	if ww.eventStream() {
		if ww.rest && status == http.StatusOK {
			ww.held = true
			return
		}
		ww.stream = true
		ww.w.WriteHeader(status)
		return
	}
	ww.status = status
}

// Write passes stream events through (fixing JSON-RPC errors in them) and
// buffers everything else.
func (ww *wireWriter) Write(p []byte) (int, error) {
	if !ww.stream && !ww.flushed && !ww.held && ww.buf.Len() == 0 && ww.eventStream() {
		ww.WriteHeader(http.StatusOK)
	}
	if ww.held {
		ww.buf.Write(p)
		if bytes.HasSuffix(ww.buf.Bytes(), []byte("\n\n")) {
			ww.release()
		}
		return len(p), nil
	}
	if ww.flushed && !ww.stream {
		return len(p), nil // the stream became a plain error answer
	}
	if !ww.stream {
		return ww.buf.Write(p)
	}
	if !ww.rest && bytes.HasPrefix(p, []byte("data: ")) && bytes.Contains(p, []byte(`"error"`)) {
		body := bytes.TrimSuffix(bytes.TrimPrefix(p, []byte("data: ")), []byte("\n\n"))
		if fixed, ok := ww.fixRPC(body); ok {
			_, err := ww.w.Write(append(append([]byte("data: "), fixed...), '\n', '\n'))
			return len(p), err
		}
	}
	return ww.w.Write(p)
}

// release ends the hold of a REST stream at its first event: an error
// becomes a plain answer with the error's status, anything else starts the
// stream with what was held.
func (ww *wireWriter) release() {
	held := ww.buf.Bytes()
	ww.held = false
	if data, ok := firstEventData(held); ok {
		if fixed, status, ok := fixREST(data); ok {
			h := ww.w.Header()
			h.Set("Content-Type", "application/json")
			h.Del("Connection")
			h.Del("X-Accel-Buffering")
			h.Set("Cache-Control", "no-store")
			ww.flushed = true
			ww.buf.Reset()
			ww.w.WriteHeader(status)
			_, _ = ww.w.Write(append(fixed, '\n'))
			return
		}
	}
	ww.stream = true
	ww.w.WriteHeader(http.StatusOK)
	_, _ = ww.w.Write(held)
	ww.buf.Reset()
	ww.Flush()
}

// firstEventData returns the data of the first event in an event stream's
// bytes.
func firstEventData(b []byte) ([]byte, bool) {
	event, _, _ := bytes.Cut(b, []byte("\n\n"))
	var data []byte
	for _, line := range bytes.Split(event, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
		}
	}
	return data, len(data) > 0
}

// Flush implements http.Flusher, which the SDK's SSE writer requires.
func (ww *wireWriter) Flush() {
	if ww.stream {
		if f, ok := ww.w.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (ww *wireWriter) Unwrap() http.ResponseWriter { return ww.w }

// finish writes a buffered answer, corrected.
func (ww *wireWriter) finish() {
	if ww.held {
		ww.release()
	}
	if ww.stream || ww.flushed {
		return
	}
	ww.flushed = true
	body := ww.buf.Bytes()
	status := ww.status
	if !ww.rest {
		if fixed, ok := ww.fixRPC(bytes.TrimSpace(body)); ok {
			body = append(fixed, '\n')
		}
	}
	if ww.rest && status >= 400 {
		if fixed, st, ok := fixREST(bytes.TrimSpace(body)); ok {
			body, status = append(fixed, '\n'), st
		}
		// The 0.3 transport labels errors application/problem+json, which
		// its own client (and 0.3 §3.2.3: application/json for every body)
		// does not take: the body is the AIP-193 status, plain JSON.
		ww.w.Header().Set("Content-Type", "application/json")
	}
	if len(body) > 0 && ww.w.Header().Get("Content-Type") == "" {
		ww.w.Header().Set("Content-Type", "application/json")
	}
	ww.w.WriteHeader(status)
	_, _ = ww.w.Write(body)
}

// fixRPC applies the JSON-RPC corrections to one response.
func (ww *wireWriter) fixRPC(body []byte) ([]byte, bool) {
	fixed := false
	if out, ok := fixRPCResult(body, ww.rpc03); ok {
		body, fixed = out, true
	}
	if out, ok := fixParseError(body); ok {
		body, fixed = out, true
	}
	if ww.rpc03 {
		if out, ok := fixRPC03(body); ok {
			body, fixed = out, true
		}
	}
	return body, fixed
}

// fixRPCResult gives a successful response without a result member one
// (null in 0.3, {} in 1.0), and turns a 0.3 null result into [] (the only
// 0.3 method the transport answers with a null result is the list of push
// configurations, when there are none).
func fixRPCResult(body []byte, rpc03 bool) ([]byte, bool) {
	var resp map[string]json.RawMessage
	if json.Unmarshal(body, &resp) != nil || resp["jsonrpc"] == nil || resp["error"] != nil {
		return nil, false
	}
	result, ok := resp["result"]
	switch {
	case !ok && rpc03:
		resp["result"] = json.RawMessage("null")
	case !ok:
		resp["result"] = json.RawMessage("{}")
	case rpc03 && string(result) == "null":
		resp["result"] = json.RawMessage("[]")
	default:
		return nil, false
	}
	out, err := json.Marshal(resp)
	return out, err == nil
}

// fixParseError turns a parse error the transport raised about params into
// invalid params: code, ErrorInfo reason and message.
func fixParseError(body []byte) ([]byte, bool) {
	var resp map[string]json.RawMessage
	if json.Unmarshal(body, &resp) != nil || resp["error"] == nil {
		return nil, false
	}
	var e map[string]any
	if json.Unmarshal(resp["error"], &e) != nil || e["code"] != float64(-32700) {
		return nil, false
	}
	k, _ := kindOf(a2a.ErrInvalidParams)
	e["code"] = k.code
	if msg, ok := e["message"].(string); ok {
		if rest, ok := strings.CutPrefix(msg, "parse error: "); ok {
			e["message"] = "invalid params: " + rest
		}
	}
	parse, invalid := a2a.ErrorReason(a2a.ErrParseError), a2a.ErrorReason(a2a.ErrInvalidParams)
	if data, ok := e["data"].([]any); ok {
		for _, d := range data {
			if m, ok := d.(map[string]any); ok && m["reason"] == parse {
				m["reason"] = invalid
			}
		}
	}
	if m, ok := e["data"].(map[string]any); ok && m["reason"] == parse {
		m["reason"] = invalid
	}
	var err error
	if resp["error"], err = json.Marshal(e); err != nil {
		return nil, false
	}
	out, err := json.Marshal(resp)
	return out, err == nil
}

// fixRPC03 rewrites a JSON-RPC response whose error data is an array into
// one whose data is an object.
func fixRPC03(body []byte) ([]byte, bool) {
	var resp map[string]json.RawMessage
	if json.Unmarshal(body, &resp) != nil || resp["error"] == nil {
		return nil, false
	}
	var e struct {
		Code    int                   `json:"code"`
		Message string                `json:"message"`
		Data    []*errordetails.Typed `json:"data"`
	}
	if json.Unmarshal(resp["error"], &e) != nil || e.Data == nil {
		return nil, false
	}
	data := map[string]any{}
	var extra []any
	for _, d := range e.Data {
		if d.TypeURL == errordetails.ErrorInfoType {
			for k, v := range flattenInfo(d) {
				data[k] = v
			}
			continue
		}
		extra = append(extra, d.Value)
	}
	if len(extra) > 0 {
		data["details"] = extra
	}
	fixed, err := json.Marshal(map[string]any{"code": e.Code, "message": e.Message, "data": data})
	if err != nil {
		return nil, false
	}
	resp["error"] = fixed
	out, err := json.Marshal(resp)
	return out, err == nil
}

// fixREST sets the HTTP status (and the body's code and status fields) of a
// REST error from its ErrorInfo reason.
func fixREST(body []byte) ([]byte, int, bool) {
	var resp struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &resp) != nil || resp.Error == nil {
		return nil, 0, false
	}
	var details []*errordetails.Typed
	if json.Unmarshal(resp.Error["details"], &details) != nil {
		return nil, 0, false
	}
	for _, d := range details {
		if d.TypeURL != errordetails.ErrorInfoType {
			continue
		}
		reason, _ := d.Value["reason"].(string)
		k, ok := kindOfReason(reason)
		if !ok {
			return nil, 0, false
		}
		resp.Error["code"], _ = json.Marshal(k.status)
		resp.Error["status"], _ = json.Marshal(k.grpc)
		out, err := json.Marshal(resp)
		return out, k.status, err == nil
	}
	return nil, 0, false
}

// fixPushCreate03 accepts both bodies a 0.3 client may post to
// /v1/tasks/{id}/pushNotificationConfigs. The 0.3 proto maps that route
// with `body: "config"`, so the body is a TaskPushNotificationConfig
// ({"name", "pushNotificationConfig"}), which is what the JavaScript client
// sends; the Go compat transport (client and server alike) instead uses the
// whole CreateTaskPushNotificationConfigRequest ({"parent", "configId",
// "config"}). A bare config is wrapped into the request the server decodes;
// anything else passes unchanged. The SDK's handleCreateTaskPushConfig
// (a2acompat/a2av0, rest_server.go) decodes only the latter
// (pbjson.FromProtoCreatePushConfigRequest): the proto's own body loses its
// URL. Test: TestSDK_REST03PushCreateIgnoresTheProtoBody.
func fixPushCreate03(body []byte, taskID string) []byte {
	var probe map[string]json.RawMessage
	if json.Unmarshal(body, &probe) != nil {
		return body
	}
	if _, ok := probe["config"]; ok {
		return body
	}
	if _, ok := probe["pushNotificationConfig"]; !ok {
		return body
	}
	out, err := json.Marshal(map[string]any{"parent": "tasks/" + taskID, "config": json.RawMessage(body)})
	if err != nil {
		return body
	}
	return out
}
