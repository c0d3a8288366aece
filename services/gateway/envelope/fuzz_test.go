package envelope

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// FuzzEnvelopeDecode: whatever arrives at POST /a2a, decode either refuses
// it with an envelope error (the id known whenever the a2a block could be
// read) or accepts a message with every rule of seed 002's blocks met.
func FuzzEnvelopeDecode(f *testing.F) {
	for _, s := range []string{
		`{"a2a":{"protocol":"a2a","version":"1.0","id":"r","timestamp":"2025-11-18T10:00:00.000Z","type":"request"},"context":{"from":"a","to":"b","conversationId":"c"},"payload":{"method":"status","params":{}}}`,
		`{"a2a":{"protocol":"a2a","version":"1.0","id":"r","timestamp":"2025-11-18T10:00:00Z","type":"request"},"context":{"from":"a","to":"b"},"payload":{"method":"execute-agent"}}`,
		`{"a2a":{"protocol":"A2A"}}`, `{"a2a":[],"context":{},"payload":{}}`, `{"a2a":{"id":5}}`, `[]`, `{`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, e := decode(body)
		if e != nil {
			if e.Code != codeInvalidEnvelope && e.Code != codeUnsupportedVersion {
				t.Fatalf("refused %q with %s", body, e.Code)
			}
			if m != nil && m.A2A.ID == "" {
				t.Fatalf("refusal of %q returned a message without its id", body)
			}
			return
		}
		h := m.A2A
		if h.Protocol != "a2a" || h.Version != "1.0" || h.Type != "request" || h.ID == "" || len(h.ID) > maxIDLen {
			t.Fatalf("accepted header %+v", h)
		}
		if _, err := time.Parse(time.RFC3339, h.Timestamp); err != nil {
			t.Fatalf("accepted timestamp %q", h.Timestamp)
		}
		if m.Context.From == "" || m.Context.To == "" || m.Payload.Method == "" {
			t.Fatalf("accepted %+v", m)
		}
		var params map[string]json.RawMessage
		if p := bytes.TrimSpace(m.Payload.Params); json.Unmarshal(p, &params) != nil || params == nil {
			t.Fatalf("accepted params %q", m.Payload.Params)
		}
	})
}
