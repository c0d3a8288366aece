package adapter

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
)

// seedRequest is the request body example of seed 000.
const seedRequest = `{
  "task_run_id": "task_run_id",
  "conversation_id": "conversation_id",
  "workspace_id": "workspace_id",
  "task_type": "chat",
  "input": {
    "text": "user request"
  },
  "initiator_agent_id": "initiator_agent_id",
  "target_agent_id": "target_agent_id",
  "platform": {
    "name": "A2A",
    "origin": "ysee.tech"
  }
}`

// taskBody is a minimal run-task body for task run id.
func taskBody(id string) string {
	return `{"task_run_id":"` + id + `","conversation_id":"conv","task_type":"chat","input":{"text":"hello ` + id + `"}}`
}

// blockingProvider holds every task until the test releases it or its
// context ends.
type blockingProvider struct {
	// started receives each task run id as its run starts.
	started chan string
	// release lets one running task finish successfully per value sent.
	release chan struct{}
	// stopped receives the cause of a task's context ending.
	stopped chan error
	// report, when set, is reported as progress before blocking.
	report *provider.Progress
}

func newBlockingProvider() *blockingProvider {
	return &blockingProvider{
		started: make(chan string, 16),
		release: make(chan struct{}),
		stopped: make(chan error, 16),
	}
}

func (p *blockingProvider) Name() string { return "blocking" }

func (p *blockingProvider) Run(ctx context.Context, t *provider.Task, progress func(provider.Progress)) (*provider.Result, error) {
	p.started <- t.Request.TaskRunID
	if p.report != nil {
		progress(*p.report)
	}
	select {
	case <-p.release:
		return &provider.Result{Output: map[string]any{"text": "done " + t.Request.TaskRunID}}, nil
	case <-ctx.Done():
		p.stopped <- context.Cause(ctx)
		return nil, ctx.Err()
	}
}

// funcProvider runs a function.
type funcProvider func(ctx context.Context, t *provider.Task) (*provider.Result, error)

func (funcProvider) Name() string { return "func" }

func (f funcProvider) Run(ctx context.Context, t *provider.Task, _ func(provider.Progress)) (*provider.Result, error) {
	return f(ctx, t)
}

// startServer serves a Server for cfg on a loopback httptest server.
func startServer(t *testing.T, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	if cfg.Workdir == "" {
		cfg.Workdir = t.TempDir()
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts
}

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
	err    error
}

// post sends a run-task request and reads the whole response.
func post(ctx context.Context, url, body string, header ...string) response {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/run-task", strings.NewReader(body))
	if err != nil {
		return response{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

// postAsync sends a run-task request in the background.
func postAsync(ctx context.Context, url, body string, header ...string) <-chan response {
	ch := make(chan response, 1)
	go func() { ch <- post(ctx, url, body, header...) }()
	return ch
}

func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *Server) queued() int {
	s.queue.mu.Lock()
	defer s.queue.mu.Unlock()
	return len(s.queue.waiting)
}

// parseReply classifies a 200 reply as the runtime does.
func parseReply(t *testing.T, r response) *adapterapi.Reply {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.status != http.StatusOK {
		t.Fatalf("status %d, body %s", r.status, r.body)
	}
	reply, err := adapterapi.ParseReply(r.body)
	if err != nil {
		t.Fatalf("reply %s: %v", r.body, err)
	}
	return reply
}

// failureOf decodes a refusal: the status and the failure body.
func failureOf(t *testing.T, r response) (int, string) {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	var f map[string]any
	if err := json.Unmarshal(r.body, &f); err != nil || f["success"] != false || f["error"] == "" {
		t.Fatalf("status %d: body %q is not a failure reply", r.status, r.body)
	}
	msg, _ := f["error"].(string)
	return r.status, msg
}
