package partner

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/a2amesh/a2amesh/internal/partnerapi"
)

// FuzzJSONRPCEnvelope: whatever arrives at /a2a/message, seed 003's
// envelope rules either refuse it (-32700 only for what is not JSON,
// -32600 otherwise, never another code) or accept a request with jsonrpc
// "2.0", a string, number or null id, a non-empty method and params that
// are absent, an object or an array.
func FuzzJSONRPCEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":"req-1","method":"story.generate","params":{"characterId":"char_123"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"agent.list"}`, `{"jsonrpc":"2.0","id":1,"method":"x","params":[1,2]}`,
		`{"jsonrpc":"1.0","id":1,"method":"x"}`, `{"jsonrpc":"2.0","id":{},"method":"x"}`, `{"jsonrpc":"2.0","method":""}`,
		`{"jsonrpc":"2.0","method":"x","params":"s"}`, `[]`, `{`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		env, e := parseEnvelope(body)
		if e != nil {
			switch e.code {
			case partnerapi.CodeParseError:
				if json.Valid(body) {
					t.Fatalf("valid JSON %q called a parse error", body)
				}
			case partnerapi.CodeInvalidRequest:
				if !json.Valid(body) {
					t.Fatalf("invalid JSON %q not called a parse error", body)
				}
			default:
				t.Fatalf("refused %q with code %d", body, e.code)
			}
			return
		}
		var raw map[string]json.RawMessage
		if json.Unmarshal(body, &raw) != nil || string(raw["jsonrpc"]) != `"2.0"` || env.method == "" {
			t.Fatalf("accepted %q", body)
		}
		switch env.id.(type) {
		case nil, string, float64:
		default:
			t.Fatalf("accepted id %T", env.id)
		}
		if p := bytes.TrimSpace(env.params); len(p) > 0 && p[0] != '{' && p[0] != '[' {
			t.Fatalf("accepted params %q", env.params)
		}
	})
}
