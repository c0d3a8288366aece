package a2aserver

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// FuzzJSONRPCRequest: whatever arrives as a JSON-RPC body, the front either
// refuses it with a parse, request or params error (carrying the request's
// id when it had a valid one), or passes on a request object whose params
// are an object, with a method name.
func FuzzJSONRPCRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`,
		`{"jsonrpc":"2.0","id":"a","method":"GetExtendedAgentCard"}`,
		`{"jsonrpc":"2.0","method":"tasks/get","params":[1]}`,
		`{"jsonrpc":"1.0","id":1,"method":"x"}`, `[]`, `{`, `null`, `{"id":{}}`, `{"jsonrpc":"2.0","id":1.5,"method":""}`,
	} {
		f.Add([]byte(s), "GetTask")
	}
	f.Fuzz(func(t *testing.T, body []byte, method string) {
		env, err := parseEnvelope(body)
		if err != nil {
			if !errors.Is(err, a2a.ErrParseError) && !errors.Is(err, a2a.ErrInvalidRequest) {
				t.Fatalf("envelope refused with %v", err)
			}
			if errors.Is(err, a2a.ErrParseError) && json.Valid(body) {
				t.Fatalf("valid JSON %q called a parse error", body)
			}
			return
		}
		if env.method == "" {
			t.Fatalf("accepted %q without a method", body)
		}
		switch env.id.(type) {
		case nil, string, float64:
		default:
			t.Fatalf("accepted id %T", env.id)
		}
		out, err := withParams(body, env, method)
		if err != nil {
			if !errors.Is(err, a2a.ErrInvalidParams) {
				t.Fatalf("params refused with %v", err)
			}
			return
		}
		var req struct {
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(out, &req) != nil || len(req.Params) == 0 || req.Params[0] != '{' {
			t.Fatalf("passed on %q with params %q", out, req.Params)
		}
	})
}

// FuzzVersionAndRoute: any A2A-Version value and REST path get one version
// (1.0, 0.3, or refused as unsupported) and at most one method, whose scope
// is known.
func FuzzVersionAndRoute(f *testing.F) {
	for _, s := range [][3]string{
		{"1.0", "POST", "/message:send"}, {"", "GET", "/tasks/abc:subscribe"}, {"0.3.0", "DELETE", "/tasks/a/pushNotificationConfigs/b"},
		{"v1.0", "GET", "/extendedAgentCard"}, {"2", "POST", "/tasks/x:cancel"}, {"1", "GET", "//tasks//"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, version, method, path string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("A2A-Version", version)
		v, ok := negotiate(r)
		if ok && v != "1.0" && v != "0.3" {
			t.Fatalf("version %q negotiated to %q", version, v)
		}
		if strings.TrimSpace(version) == "" && (!ok || v != "0.3") {
			t.Fatalf("an empty version is not 0.3: %q %v", v, ok)
		}
		m := restMethod(method, path)
		if m == "" {
			return
		}
		if _, known := scopes[m]; !known {
			t.Fatalf("%s %s routed to %q, which has no scope", method, path, m)
		}
	})
}

// FuzzWireFixes: the corrections of the SDK's error shapes never make a
// valid answer invalid: a fixed 0.3 error has an object data, a fixed REST
// error a known status.
func FuzzWireFixes(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"m","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{"taskId":"x"}}]}}`))
	f.Add([]byte(`{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"m","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_CANCELABLE","domain":"a2a-protocol.org"}]}}`))
	f.Add([]byte(`{"result":{}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if fixed, ok := fixRPC03(body); ok {
			var resp struct {
				Error struct {
					Data map[string]any `json:"data"`
				} `json:"error"`
			}
			if err := json.Unmarshal(fixed, &resp); err != nil || resp.Error.Data == nil {
				t.Fatalf("fixed 0.3 error %s: %v", fixed, err)
			}
		}
		if fixed, status, ok := fixREST(body); ok {
			if status < 400 || status > 599 || !json.Valid(fixed) {
				t.Fatalf("fixed REST error %s with status %d", fixed, status)
			}
		}
	})
}
