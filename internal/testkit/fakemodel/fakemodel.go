// Package fakemodel is a model API for tests: one local HTTP server that
// speaks the Anthropic Messages API, the OpenAI Responses and Chat
// Completions APIs and the Gemini generateContent API, each streamed the way
// its real counterpart streams (Server-Sent Events, and the Responses API's
// WebSocket mode too). Real agent host CLIs are
// pointed at it with their own base URL settings, so that a test runs the
// real host against answers it scripts: text, a tool call, or an error.
//
// It records every request, so a test can check what a host sent (its
// conversation so far, the credential it presented) and wait for a request
// to arrive.
package fakemodel

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// API names the model API a request was made to.
type API string

// The APIs the server speaks.
const (
	Anthropic       API = "anthropic"        // POST /v1/messages
	Responses       API = "openai-responses" // POST /v1/responses, or GET /v1/responses upgraded to a WebSocket
	ChatCompletions API = "openai-chat"      // POST /v1/chat/completions
	Gemini          API = "gemini"           // POST /v1beta/models/{model}:streamGenerateContent, :generateContent
)

// Reply is what the model answers to one request.
type Reply struct {
	// Text is the assistant's text. It is streamed in a few chunks.
	Text string
	// Tool, when set, is a tool call the assistant makes after Text.
	Tool *ToolCall
	// Status, when not zero, makes the reply an error with this HTTP
	// status and the API's own error body carrying ErrorMessage.
	Status int
	// ErrorMessage is the error's message; default: the status text.
	ErrorMessage string
	// Hold, when set, delays the answer until it is closed or the
	// request's context ends.
	Hold <-chan struct{}
	// Usage is the token counts the answer reports, in each API's own
	// fields; nil: 12 input and 7 output tokens, none cached.
	Usage *Usage
}

// Usage is what one answer says it cost, in tokens.
type Usage struct {
	// Input counts the prompt's tokens, Cached included.
	Input int
	// Output counts the answer's.
	Output int
	// Cached counts the prompt's tokens read from the cache.
	Cached int
}

// usageOf is the usage a reply reports.
func usageOf(reply Reply) Usage {
	if reply.Usage == nil {
		return Usage{Input: 12, Output: 7}
	}
	return *reply.Usage
}

// ToolCall is a call of one of the tools the host offered.
type ToolCall struct {
	// Name is the tool's name as the host declared it.
	Name string
	// Args are its arguments.
	Args map[string]any
	// Namespace, for the Responses API, is the namespace tool the called
	// tool belongs to (hosts that group tools, e.g. an MCP server's, under
	// one namespace); empty for a top-level tool.
	Namespace string
}

// Respond decides the reply to a request.
type Respond func(*Request) Reply

// Request is one request a host made.
type Request struct {
	// API is the API it was made to.
	API API
	// Method and Path are the HTTP method and the URL path.
	Method, Path string
	// Header is the request's header.
	Header http.Header
	// Body is the request body.
	Body []byte
	// Model is the model the request named.
	Model string
	// Stream says whether the host asked for a streamed answer.
	Stream bool
	// WebSocket says the request came over the Responses API's WebSocket
	// mode: Body is its response.create message, with the conversation of
	// the response it continues (previous_response_id) put before its
	// input. A warm-up ("generate": false) is recorded, but Respond is not
	// asked. A refused upgrade is recorded too, without a body.
	WebSocket bool

	decoded map[string]any
}

// Server is a running fake model API.
type Server struct {
	// URL is the server's base URL, without a trailing slash.
	URL string

	srv     *httptest.Server
	respond Respond
	// done ends the WebSocket connections, which closing srv leaves open.
	done chan struct{}

	mu           sync.Mutex
	requests     []*Request
	changed      chan struct{}
	noWebSockets bool
	usage        *Usage
}

// Start starts a server that answers with respond; it is closed when the
// test ends. A nil respond answers every request with the text "OK".
func Start(t testing.TB, respond Respond) *Server {
	t.Helper()
	if respond == nil {
		respond = func(*Request) Reply { return Reply{Text: "OK"} }
	}
	s := &Server{respond: respond, changed: make(chan struct{}), done: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(func() {
		close(s.done)
		s.srv.Close()
	})
	return s
}

// RefuseWebSockets makes the server answer an upgrade to the Responses
// API's WebSocket mode with 404, as an endpoint without it does; clients
// then use HTTP.
func (s *Server) RefuseWebSockets() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noWebSockets = true
}

func (s *Server) refusingWebSockets() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.noWebSockets
}

// SetRespond replaces the function that decides the replies.
func (s *Server) SetRespond(respond Respond) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.respond = respond
}

// SetUsage makes every answer whose Reply has no Usage of its own report
// u; nil goes back to the default counts.
func (s *Server) SetUsage(u *Usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.usage = u
}

// withUsage gives reply the server's usage when it has none of its own.
func (s *Server) withUsage(reply Reply) Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if reply.Usage == nil {
		reply.Usage = s.usage
	}
	return reply
}

// Requests returns the requests made so far, in order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// WaitRequest waits until a request matching cond has arrived and returns
// it; the test fails after timeout.
func (s *Server) WaitRequest(t testing.TB, timeout time.Duration, cond func(*Request) bool) *Request {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		for _, r := range s.requests {
			if cond(r) {
				s.mu.Unlock()
				return r
			}
		}
		changed := s.changed
		n := len(s.requests)
		s.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no matching model request within %s (%d requests: %s)", timeout, n, s.describe())
			return nil
		}
	}
}

func (s *Server) describe() string {
	var paths []string
	for _, r := range s.Requests() {
		paths = append(paths, r.Method+" "+r.Path)
	}
	return strings.Join(paths, ", ")
}

func (s *Server) record(r *Request) Respond {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
	close(s.changed)
	s.changed = make(chan struct{})
	return s.respond
}

func (s *Server) serve(w http.ResponseWriter, hr *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(hr.Body, 64<<20))
	r := &Request{Method: hr.Method, Path: hr.URL.Path, Header: hr.Header.Clone(), Body: body}
	_ = json.Unmarshal(body, &r.decoded)
	r.Model, _ = r.decoded["model"].(string)
	r.Stream, _ = r.decoded["stream"].(bool)
	path := hr.URL.Path
	switch {
	case hr.Method == http.MethodGet && strings.HasSuffix(path, "/responses") && isWebSocket(hr):
		s.serveResponsesSocket(w, hr)
		return
	case hr.Method == http.MethodPost && strings.HasSuffix(path, "/messages/count_tokens"):
		r.API = Anthropic
		s.record(r)
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": 100})
		return
	case hr.Method == http.MethodPost && strings.HasSuffix(path, "/messages"):
		r.API = Anthropic
	case hr.Method == http.MethodPost && strings.HasSuffix(path, "/responses"):
		r.API = Responses
	case hr.Method == http.MethodPost && strings.HasSuffix(path, "/chat/completions"):
		r.API = ChatCompletions
	case hr.Method == http.MethodPost && strings.Contains(path, ":streamGenerateContent"):
		r.API, r.Stream = Gemini, true
		r.Model = geminiModel(path)
	case hr.Method == http.MethodPost && strings.Contains(path, ":generateContent"):
		r.API = Gemini
		r.Model = geminiModel(path)
	case hr.Method == http.MethodPost && strings.Contains(path, ":countTokens"):
		r.API = Gemini
		s.record(r)
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": 100})
		return
	case hr.Method == http.MethodGet && strings.HasSuffix(path, "/models"):
		s.record(r)
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{}, "models": []any{}})
		return
	default:
		s.record(r)
		http.NotFound(w, hr)
		return
	}
	reply := s.withUsage(s.record(r)(r))
	if reply.Hold != nil {
		select {
		case <-reply.Hold:
		case <-hr.Context().Done():
			return
		}
	}
	if reply.Status != 0 {
		writeError(w, r.API, reply)
		return
	}
	switch r.API {
	case Anthropic:
		writeAnthropic(w, r, reply)
	case Responses:
		writeResponses(w, r, reply)
	case ChatCompletions:
		writeChat(w, r, reply)
	case Gemini:
		writeGemini(w, r, reply)
	}
}

func geminiModel(path string) string {
	_, after, _ := strings.Cut(path, "/models/")
	model, _, _ := strings.Cut(after, ":")
	return model
}

// Contains reports whether the request body holds s, as sent (JSON
// escaping included).
func (r *Request) Contains(s string) bool {
	return bytes.Contains(r.Body, []byte(s)) || bytes.Contains(r.Body, jsonString(s))
}

func jsonString(s string) []byte {
	b, _ := json.Marshal(s)
	return b[1 : len(b)-1]
}

// Key returns the credential the request presented: the x-api-key,
// x-goog-api-key or bearer token header, or the key query parameter.
func (r *Request) Key() string {
	for _, h := range []string{"X-Api-Key", "X-Goog-Api-Key"} {
		if v := r.Header.Get(h); v != "" {
			return v
		}
	}
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return v
	}
	return ""
}

// Tools returns the names of the tools the request offered the model.
func (r *Request) Tools() []string {
	var names []string
	tools, _ := r.decoded["tools"].([]any)
	for _, t := range tools {
		m, _ := t.(map[string]any)
		if name, ok := m["name"].(string); ok {
			names = append(names, name)
		}
		if fn, ok := m["function"].(map[string]any); ok {
			if name, ok := fn["name"].(string); ok {
				names = append(names, name)
			}
		}
		decls, _ := m["functionDeclarations"].([]any)
		for _, d := range decls {
			if dm, ok := d.(map[string]any); ok {
				if name, ok := dm["name"].(string); ok {
					names = append(names, name)
				}
			}
		}
	}
	return names
}

// NamespaceOf returns the namespace tool (Responses API) that offers a tool
// of that name, or "".
func (r *Request) NamespaceOf(name string) string {
	tools, _ := r.decoded["tools"].([]any)
	for _, t := range tools {
		m, _ := t.(map[string]any)
		inner, _ := m["tools"].([]any)
		for _, it := range inner {
			if im, ok := it.(map[string]any); ok && im["name"] == name {
				ns, _ := m["name"].(string)
				return ns
			}
		}
	}
	return ""
}

// HasTool reports whether the request offered a tool of that name.
func (r *Request) HasTool(name string) bool {
	for _, n := range r.Tools() {
		if n == name {
			return true
		}
	}
	return false
}

// AfterToolResult reports whether the request's last message carries the
// result of a tool call: the model is being asked to go on after a tool ran.
func (r *Request) AfterToolResult() bool {
	switch r.API {
	case Anthropic:
		msgs, _ := r.decoded["messages"].([]any)
		if len(msgs) == 0 {
			return false
		}
		last, _ := msgs[len(msgs)-1].(map[string]any)
		return hasPartType(last["content"], "type", "tool_result")
	case Responses:
		input, _ := r.decoded["input"].([]any)
		for i := len(input) - 1; i >= 0; i-- {
			item, _ := input[i].(map[string]any)
			typ, _ := item["type"].(string)
			if strings.HasSuffix(typ, "_output") {
				return true
			}
			if typ == "message" || item["role"] != nil {
				return false
			}
		}
	case ChatCompletions:
		// Hosts may add a user message of their own context after the
		// tool results (OpenClaw does): the model goes on after a tool
		// when a tool result comes after the last assistant message.
		msgs, _ := r.decoded["messages"].([]any)
		for i := len(msgs) - 1; i >= 0; i-- {
			m, _ := msgs[i].(map[string]any)
			switch m["role"] {
			case "tool", "function":
				return true
			case "assistant":
				return false
			}
		}
	case Gemini:
		contents, _ := r.decoded["contents"].([]any)
		if len(contents) == 0 {
			return false
		}
		last, _ := contents[len(contents)-1].(map[string]any)
		parts, _ := last["parts"].([]any)
		for _, p := range parts {
			if m, ok := p.(map[string]any); ok && m["functionResponse"] != nil {
				return true
			}
		}
	}
	return false
}

func hasPartType(content any, field, value string) bool {
	parts, _ := content.([]any)
	for _, p := range parts {
		if m, ok := p.(map[string]any); ok && m[field] == value {
			return true
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers with the API's error body.
func writeError(w http.ResponseWriter, api API, reply Reply) {
	msg := reply.ErrorMessage
	if msg == "" {
		msg = http.StatusText(reply.Status)
	}
	switch api {
	case Anthropic:
		typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
			404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"}[reply.Status]
		if typ == "" {
			typ = "api_error"
		}
		writeJSON(w, reply.Status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	case Gemini:
		status := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
			429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}[reply.Status]
		if status == "" {
			status = "INTERNAL"
		}
		writeJSON(w, reply.Status, map[string]any{"error": map[string]any{"code": reply.Status, "message": msg, "status": status}})
	default:
		writeJSON(w, reply.Status, map[string]any{"error": errorBody(reply)})
	}
}

// errorBody is the "error" object of an OpenAI API error.
func errorBody(reply Reply) map[string]any {
	msg := reply.ErrorMessage
	if msg == "" {
		msg = http.StatusText(reply.Status)
	}
	typ := map[int]string{401: "invalid_request_error", 429: "rate_limit_exceeded"}[reply.Status]
	if typ == "" {
		typ = "server_error"
	}
	return map[string]any{"message": msg, "type": typ, "code": nil, "param": nil}
}

// sse writes Server-Sent Events, flushing each.
type sse struct {
	w http.ResponseWriter
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w}
}

// event writes one event; an empty name writes a data-only event.
func (s *sse) event(name string, data any) {
	b, _ := json.Marshal(data)
	if name != "" {
		_, _ = io.WriteString(s.w, "event: "+name+"\n")
	}
	_, _ = io.WriteString(s.w, "data: "+string(b)+"\n\n")
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *sse) raw(line string) {
	_, _ = io.WriteString(s.w, line+"\n\n")
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// chunks splits text into a few pieces, as a streamed answer comes.
func chunks(text string) []string {
	words := strings.SplitAfter(text, " ")
	var out []string
	for i := 0; i < len(words); i += 3 {
		end := min(i+3, len(words))
		out = append(out, strings.Join(words[i:end], ""))
	}
	return out
}

func argsJSON(tc *ToolCall) string {
	args := tc.Args
	if args == nil {
		args = map[string]any{}
	}
	b, _ := json.Marshal(args)
	return string(b)
}
