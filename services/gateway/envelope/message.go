package envelope

import (
	"bytes"
	"encoding/json"
	"time"
)

// Seed 002's message: the a2a header block, the context block and the
// payload block.
type message struct {
	A2A     header     `json:"a2a"`
	Context addressing `json:"context"`
	Payload payload    `json:"payload"`
}

// header is the a2a block.
type header struct {
	Protocol     string `json:"protocol"`
	Version      string `json:"version"`
	ID           string `json:"id"`
	InResponseTo string `json:"inResponseTo,omitempty"`
	Timestamp    string `json:"timestamp"`
	Type         string `json:"type"`
}

// addressing is the context block.
type addressing struct {
	From           string `json:"from"`
	To             string `json:"to"`
	ConversationID string `json:"conversationId,omitempty"`
}

// payload is the payload block: method and params in a request, result
// (or, on failure, error) in a response.
type payload struct {
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result any             `json:"result,omitempty"`
	Error  *payloadError   `json:"error,omitempty"`
}

// Values of the header block.
const (
	protocolA2A     = "a2a"
	protocolVersion = "1.0"
	typeRequest     = "request"
	typeResponse    = "response"
	maxIDLen        = 256
)

// decode reads a request message and checks every rule of seed 002's
// blocks: protocol exactly "a2a", version "1.0", a non-empty id, an RFC
// 3339 timestamp, type "request"; context with from and to (conversationId
// optional); payload with a non-empty method and params that are an object
// (or absent). The message is returned as far as it could be read, so the
// refusal can answer its id.
func decode(body []byte) (*message, *payloadError) {
	var raw struct {
		A2A     json.RawMessage `json:"a2a"`
		Context json.RawMessage `json:"context"`
		Payload json.RawMessage `json:"payload"`
	}
	t := bytes.TrimSpace(body)
	if len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &raw) != nil {
		return nil, invalid("the body must be a JSON object with the a2a, context and payload blocks")
	}
	m := &message{}
	if !isObject(raw.A2A) || json.Unmarshal(raw.A2A, &m.A2A) != nil {
		return nil, invalid("the a2a block must be an object with protocol, version, id, timestamp and type (strings)")
	}
	if m.A2A.ID == "" || len(m.A2A.ID) > maxIDLen {
		return nil, invalid("a2a.id must be a non-empty string of at most 256 characters")
	}
	switch {
	case m.A2A.Protocol != protocolA2A:
		return m, invalid(`a2a.protocol must be "a2a"`)
	case m.A2A.Version != protocolVersion:
		return m, &payloadError{Code: codeUnsupportedVersion, Message: `a2a.version must be "1.0"`}
	case m.A2A.Type != typeRequest:
		return m, invalid(`a2a.type must be "request"`)
	}
	if _, err := time.Parse(time.RFC3339, m.A2A.Timestamp); err != nil {
		return m, invalid("a2a.timestamp must be an RFC 3339 time, e.g. 2025-11-18T10:00:00.000Z")
	}
	if !isObject(raw.Context) || json.Unmarshal(raw.Context, &m.Context) != nil {
		return m, invalid("the context block must be an object with from, to and conversationId (strings)")
	}
	if m.Context.From == "" || m.Context.To == "" {
		return m, invalid("context.from and context.to are required")
	}
	if !isObject(raw.Payload) {
		return m, invalid("the payload block must be an object with method and params")
	}
	var p struct {
		Method json.RawMessage `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(raw.Payload, &p)
	if json.Unmarshal(p.Method, &m.Payload.Method) != nil || m.Payload.Method == "" {
		return m, invalid("payload.method must be a non-empty string")
	}
	switch {
	case len(p.Params) == 0 || string(bytes.TrimSpace(p.Params)) == "null":
		m.Payload.Params = json.RawMessage(`{}`)
	case isObject(p.Params):
		m.Payload.Params = p.Params
	default:
		return m, invalid("payload.params must be an object")
	}
	return m, nil
}

func isObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	var obj map[string]json.RawMessage
	return len(t) > 0 && t[0] == '{' && json.Unmarshal(t, &obj) == nil
}
