package provider

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
)

const testGatewayToken = "oc-gateway-token-5566778899"

// fakeGateway is an OpenClaw gateway's /v1/chat/completions: it checks the
// bearer token, the model and the agent header, and answers as mode says.
type fakeGateway struct {
	srv      *httptest.Server
	mode     string
	mu       sync.Mutex
	requests []gatewayRequest
	gone     chan struct{} // closed when a hanging request's client left
}

type gatewayRequest struct {
	header http.Header
	body   struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		User     string `json:"user"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
}

func newFakeGateway(t *testing.T, mode string) *fakeGateway {
	t.Helper()
	g := &fakeGateway{mode: mode, gone: make(chan struct{})}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *fakeGateway) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" || g.mode == "disabled" {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+testGatewayToken {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"Unauthorized","type":"unauthorized"}}`)
		return
	}
	var req gatewayRequest
	req.header = r.Header.Clone()
	if err := json.NewDecoder(r.Body).Decode(&req.body); err != nil || !strings.HasPrefix(req.body.Model, "openclaw/") {
		http.Error(w, `{"error":{"message":"bad model"}}`, http.StatusBadRequest)
		return
	}
	g.mu.Lock()
	g.requests = append(g.requests, req)
	g.mu.Unlock()

	if g.mode == "json" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl_1","object":"chat.completion","model":"openclaw","choices":[{"index":0,"message":{"role":"assistant","content":"A plain answer."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flush := func(s string) {
		io.WriteString(w, s)
		w.(http.Flusher).Flush()
	}
	flush(": keep-alive\n\n")
	flush(`data: {"id":"chatcmpl_1","object":"chat.completion.chunk","model":"openclaw","choices":[{"index":0,"delta":{"role":"assistant","content":"Checking the calendar. "},"finish_reason":null}]}` + "\n\n")
	switch g.mode {
	case "hang":
		<-r.Context().Done()
		close(g.gone)
		return
	case "error":
		flush(`data: {"error":{"message":"agent run failed: model overloaded","type":"server_error"}}` + "\n\n")
		return
	case "cut":
		return
	}
	flush(`data: {"id":"chatcmpl_1","object":"chat.completion.chunk","model":"openclaw","choices":[{"index":0,"delta":{"content":"You are free\non Friday."},"finish_reason":null}]}` + "\n\n")
	flush(`data: {"id":"chatcmpl_1","object":"chat.completion.chunk","model":"openclaw","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n")
	flush("data: [DONE]\n\n")
}

func (g *fakeGateway) request(t *testing.T, i int) gatewayRequest {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if i >= len(g.requests) {
		t.Fatalf("the gateway got %d requests, want more than %d", len(g.requests), i)
	}
	return g.requests[i]
}

func newTestOpenClaw(t *testing.T, g *fakeGateway, cfg OpenClawConfig) *OpenClaw {
	t.Helper()
	cfg.GatewayURL = g.srv.URL
	if cfg.Token == "" {
		cfg.Token = testGatewayToken
	}
	o, err := NewOpenClaw(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestOpenClaw_StreamsTheAgentsAnswer(t *testing.T) {
	g := newFakeGateway(t, "")
	o := newTestOpenClaw(t, g, OpenClawConfig{AgentID: "ops", Model: "anthropic/claude-sonnet-4-5"})
	task := hostTask(t, t.TempDir(), "conv", "When am I free?")

	res, err, log := runHost(t, o, task)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Output["text"]; got != "Checking the calendar. You are free\non Friday." {
		t.Fatalf("output.text = %q", got)
	}
	log.wantMessages(t, "sent to OpenClaw agent ops", "Checking the calendar.")
	meta := metadata(t, res)
	if meta["host"] != "openclaw" || meta["agent_id"] != "ops" || meta["model"] != "openclaw" {
		t.Errorf("metadata = %v", meta)
	}
	if _, ok := meta["session_id"]; ok {
		t.Error("a stateless run reports a session")
	}
	req := g.request(t, 0)
	if req.body.Model != "openclaw/ops" || !req.body.Stream || req.body.User != "" {
		t.Errorf("model %q stream %v user %q", req.body.Model, req.body.Stream, req.body.User)
	}
	if req.header.Get("X-Openclaw-Agent-Id") != "ops" || req.header.Get("X-Openclaw-Model") != "anthropic/claude-sonnet-4-5" {
		t.Errorf("headers %v", req.header)
	}
	if len(req.body.Messages) != 2 || req.body.Messages[0].Role != "system" || req.body.Messages[1].Content != "When am I free?" ||
		!strings.Contains(req.body.Messages[0].Content, "You are the release agent.\n\nAnswer in English.") ||
		!strings.Contains(req.body.Messages[0].Content, task.OutputDir) {
		t.Errorf("messages %+v", req.body.Messages)
	}
}

func TestOpenClaw_ReadsAPlainCompletionToo(t *testing.T) {
	g := newFakeGateway(t, "json")
	res, err, _ := runHost(t, newTestOpenClaw(t, g, OpenClawConfig{}), hostTask(t, t.TempDir(), "conv", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Output["text"] != "A plain answer." || g.request(t, 0).body.Model != "openclaw/main" {
		t.Fatalf("output %v, model %q", res.Output, g.request(t, 0).body.Model)
	}
}

func TestOpenClaw_Failures(t *testing.T) {
	tests := []struct {
		mode, token string
		says        []string
	}{
		{"", "a-wrong-token-000", []string{"the OpenClaw gateway refused the credential (HTTP 401)", OpenClawTokenEnv, "Unauthorized"}},
		{"disabled", "", []string{"has no chat completions endpoint", "HTTP 404", "gateway.http.endpoints.chatCompletions.enabled"}},
		{"error", "", []string{"the OpenClaw gateway reported an error: agent run failed: model overloaded"}},
		{"cut", "", []string{"the OpenClaw gateway", "ended before it was complete"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode+tt.token, func(t *testing.T) {
			g := newFakeGateway(t, tt.mode)
			o := newTestOpenClaw(t, g, OpenClawConfig{Token: tt.token})
			res, err, _ := runHost(t, o, hostTask(t, t.TempDir(), "conv", "hi"))
			if res != nil {
				t.Fatalf("result %+v for a failed run", res.Output)
			}
			wantError(t, err, tt.says...)
			if strings.Contains(err.Error(), testGatewayToken) || (tt.token != "" && strings.Contains(err.Error(), tt.token)) {
				t.Fatalf("a token is in the failure: %v", err)
			}
		})
	}
}

func TestOpenClaw_UnreachableGatewaySaysWhere(t *testing.T) {
	o, err := NewOpenClaw(OpenClawConfig{GatewayURL: "http://" + closedAddr(t), Token: testGatewayToken})
	if err != nil {
		t.Fatal(err)
	}
	_, err, _ = runHost(t, o, hostTask(t, t.TempDir(), "conv", "hi"))
	wantError(t, err, "the OpenClaw gateway is not reachable at http://", "/v1/chat/completions", "refused")
}

func TestOpenClaw_CancelClosesTheRequest(t *testing.T) {
	g := newFakeGateway(t, "hang")
	o := newTestOpenClaw(t, g, OpenClawConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	log := &progressLog{}
	done := make(chan error, 1)
	go func() {
		_, err := o.Run(ctx, hostTask(t, t.TempDir(), "conv", "hi"), log.report)
		done <- err
	}()
	eventually(t, 10*time.Second, "the first streamed sentence", func() bool {
		return len(log.messages()) >= 2
	})
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	select {
	case <-g.gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the gateway's request was not closed")
	}
}

func TestOpenClaw_SessionPersistenceKeepsOneGatewaySessionPerConversation(t *testing.T) {
	g := newFakeGateway(t, "")
	store, err := OpenSessionStore(t.TempDir(), "openclaw")
	if err != nil {
		t.Fatal(err)
	}
	o := newTestOpenClaw(t, g, OpenClawConfig{Sessions: store})
	root := t.TempDir()
	for _, conv := range []string{"conv-a", "conv-a", "conv-b"} {
		if _, err, _ := runHost(t, o, hostTask(t, root, conv, "hi")); err != nil {
			t.Fatal(err)
		}
	}
	a1, a2, b := g.request(t, 0).body.User, g.request(t, 1).body.User, g.request(t, 2).body.User
	if a1 == "" || a1 != a2 || b == "" || b == a1 {
		t.Fatalf("session keys %q %q %q: want one per conversation, kept", a1, a2, b)
	}
}

func TestOpenClaw_RefusesToStartWithoutTheToken(t *testing.T) {
	_, err := NewOpenClaw(OpenClawConfig{})
	if !errors.Is(err, ErrMissingCredential) {
		t.Fatalf("err = %v, want ErrMissingCredential", err)
	}
	wantError(t, err, OpenClawTokenEnv)
}

func TestOpenClaw_OutputFilesBecomeArtifacts(t *testing.T) {
	// The gateway agent runs on this machine and writes where the system
	// prompt told it to.
	var task *Task
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req gatewayRequest
		_ = json.NewDecoder(r.Body).Decode(&req.body)
		dir := strings.TrimSuffix(strings.TrimPrefix(lastLine(req.body.Messages[0].Content), "Files you want to deliver go in "), ".")
		if dir != task.OutputDir {
			http.Error(w, "no output directory in the system prompt", http.StatusBadRequest)
			return
		}
		writeScript(t, dir, "notes.txt", "")
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"Wrote notes."}}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	o, err := NewOpenClaw(OpenClawConfig{GatewayURL: srv.URL, Token: testGatewayToken})
	if err != nil {
		t.Fatal(err)
	}
	task = hostTask(t, t.TempDir(), "conv", "write notes")
	res, err, _ := runHost(t, o, task)
	if err != nil {
		t.Fatal(err)
	}
	writes, err := adapterapi.ArtifactWrites(res.Output)
	if err != nil || len(writes) != 1 || writes[0].Filename != "notes.txt" {
		t.Fatalf("artifacts %+v, %v", writes, err)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.Listener.Addr().String()
	srv.Close()
	return addr
}
