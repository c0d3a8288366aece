package a2aserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/v2/errordetails"
)

// wireWriter sits between the SDK's transports and the client and corrects
// what the transports get wrong about error shapes, so each version's
// errors are exactly as its specification writes them:
//
//   - The 0.3 JSON-RPC transport (a2acompat/a2av0) writes errors with 1.0's
//     typed-array data; a 0.3 error's data is an object (0.3 §6.12), and the
//     0.3 Go client cannot decode an array there. The array becomes an
//     object, in plain answers and in SSE streams alike.
//   - The 0.3 JSON-RPC transport leaves Content-Type unset on errors, and
//     its REST transport labels them application/problem+json, which its
//     own client refuses; both become application/json.
//   - The REST transports answer some errors with other statuses than spec
//     1.0 §5.4 gives (400 for TaskNotCancelable, ContentTypeNotSupported,
//     ...); the status, and the code and status fields of the body, are set
//     from the error's reason.
//
// Plain answers are buffered (they are small) and fixed when the transport
// is done; event streams pass through as they are written.
type wireWriter struct {
	w       http.ResponseWriter
	rpc03   bool // rewrite JSON-RPC 0.3 error data
	rest    bool // correct REST error statuses
	status  int
	buf     bytes.Buffer
	stream  bool
	flushed bool
}

func newWireWriter(w http.ResponseWriter, rpc03, rest bool) *wireWriter {
	return &wireWriter{w: w, rpc03: rpc03, rest: rest, status: http.StatusOK}
}

// Header implements http.ResponseWriter.
func (ww *wireWriter) Header() http.Header { return ww.w.Header() }

// WriteHeader starts an event stream at once; other answers wait for finish.
func (ww *wireWriter) WriteHeader(status int) {
	if ww.stream || ww.flushed {
		return
	}
	if strings.HasPrefix(ww.w.Header().Get("Content-Type"), "text/event-stream") {
		ww.stream = true
		ww.w.WriteHeader(status)
		return
	}
	ww.status = status
}

// Write passes stream events through (fixing JSON-RPC 0.3 errors in them)
// and buffers everything else.
func (ww *wireWriter) Write(p []byte) (int, error) {
	if !ww.stream && !ww.flushed && ww.buf.Len() == 0 && strings.HasPrefix(ww.w.Header().Get("Content-Type"), "text/event-stream") {
		ww.WriteHeader(http.StatusOK)
	}
	if !ww.stream {
		return ww.buf.Write(p)
	}
	if ww.rpc03 && bytes.HasPrefix(p, []byte("data: ")) && bytes.Contains(p, []byte(`"error"`)) {
		body := bytes.TrimSuffix(bytes.TrimPrefix(p, []byte("data: ")), []byte("\n\n"))
		if fixed, ok := fixRPC03(body); ok {
			_, err := ww.w.Write(append(append([]byte("data: "), fixed...), '\n', '\n'))
			return len(p), err
		}
	}
	return ww.w.Write(p)
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
	if ww.stream || ww.flushed {
		return
	}
	ww.flushed = true
	body := ww.buf.Bytes()
	status := ww.status
	if ww.rpc03 {
		if fixed, ok := fixRPC03(bytes.TrimSpace(body)); ok {
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
// anything else passes unchanged.
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
