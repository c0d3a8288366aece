package meshtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
)

// httpClient is shared by every raw request so connections are reused across
// the many calls of a test; per-call deadlines come from contexts.
var httpClient = &http.Client{}

// Request is one raw HTTP call to the platform. Tests that check status codes,
// headers and error bodies use it instead of the typed API client, which turns
// answers into Go errors.
type Request struct {
	Method string
	// Path may carry a query string.
	Path string
	// Owner sends the platform's owner credential.
	Owner bool
	// RuntimeToken, when set, is sent as X-Runtime-Token.
	RuntimeToken string
	// JSON is marshalled as the body with Content-Type application/json.
	JSON any
	// Body is sent as is (with ContentType) when JSON is nil.
	Body        []byte
	ContentType string
	Header      http.Header
	// Timeout bounds the call. Default 30s.
	Timeout time.Duration
}

// Response is a whole HTTP answer, read before Send returns.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	// Elapsed is how long the call took, for long-poll timing assertions.
	Elapsed time.Duration
}

// ErrorBody is the shape of every error answer of the platform API.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status,omitempty"`
	} `json:"error"`
}

// Send performs a raw request, failing the test only when no answer arrives.
func (p *Platform) Send(t testing.TB, r Request) *Response {
	t.Helper()
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	body := r.Body
	ct := r.ContentType
	if r.JSON != nil {
		b, err := json.Marshal(r.JSON)
		if err != nil {
			t.Fatalf("encode request body: %v", err)
		}
		body, ct = b, "application/json"
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, p.APIBase+r.Path, rd)
	if err != nil {
		t.Fatalf("build request %s %s: %v", r.Method, r.Path, err)
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if r.Owner {
		req.Header.Set("Authorization", "Bearer "+p.OwnerToken)
	}
	if r.RuntimeToken != "" {
		req.Header.Set("X-Runtime-Token", r.RuntimeToken)
	}
	start := time.Now()
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.Method, r.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read answer: %v", r.Method, r.Path, err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b, Elapsed: time.Since(start)}
}

// Expect fails the test unless the answer has the given status, and returns
// the answer for chaining.
func (r *Response) Expect(t testing.TB, status int) *Response {
	t.Helper()
	if r.Status != status {
		t.Fatalf("HTTP status %d, want %d; body: %s", r.Status, status, r.shown())
	}
	return r
}

// Decode unmarshals the answer's JSON body into v.
func (r *Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode answer (HTTP %d): %v; body: %s", r.Status, err, r.shown())
	}
}

// Run decodes the answer as a task run.
func (r *Response) Run(t testing.TB) mesh.TaskRun {
	t.Helper()
	var run mesh.TaskRun
	r.Decode(t, &run)
	return run
}

// Err checks that the answer is a JSON error body — exactly one "error"
// object with a non-empty code and message, served as application/json —
// and returns it.
func (r *Response) Err(t testing.TB) ErrorBody {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error answer has Content-Type %q, want application/json; body: %s", ct, r.shown())
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &top); err != nil || len(top) != 1 || top["error"] == nil {
		t.Fatalf("error answer is not {\"error\":{...}} (HTTP %d): %s", r.Status, r.shown())
	}
	var e ErrorBody
	r.Decode(t, &e)
	if e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("error answer lacks a code or a message (HTTP %d): %s", r.Status, r.shown())
	}
	return e
}

// ExpectError checks status and error code at once and returns the error body.
func (r *Response) ExpectError(t testing.TB, status int, code mesh.Code) ErrorBody {
	t.Helper()
	r.Expect(t, status)
	e := r.Err(t)
	if e.Error.Code != string(code) {
		t.Fatalf("error code %s, want %s; body: %s", e.Error.Code, code, r.shown())
	}
	return e
}

// Heartbeat sends one runtime heartbeat over HTTP and fails the test unless it
// is accepted.
func (p *Platform) Heartbeat(t testing.TB, token string) {
	t.Helper()
	p.Send(t, Request{Method: http.MethodPost, Path: "/agent-runtimes/runtime/heartbeat", RuntimeToken: token, JSON: map[string]any{}}).
		Expect(t, http.StatusOK)
}

// OnlineRuntime attaches a new runtime to agentID and heartbeats once, so it
// may pull work straight away.
func (p *Platform) OnlineRuntime(t testing.TB, agentID string) Attached {
	t.Helper()
	a := p.Attach(agentID)
	p.Heartbeat(t, a.RuntimeToken)
	return a
}

// Pull asks for the agent's next run over HTTP; wait is the ?wait= value
// ("" for none). The raw answer is returned: 200 with a run or 204.
func (p *Platform) Pull(t testing.TB, agentID, token, wait string) *Response {
	t.Helper()
	path := "/agent-accounts/" + agentID + "/task-runs/pull"
	if wait != "" {
		path += "?wait=" + wait
	}
	return p.Send(t, Request{Method: http.MethodPost, Path: path, RuntimeToken: token, Timeout: time.Minute})
}

// PullRun pulls and fails the test unless a run was handed out.
func (p *Platform) PullRun(t testing.TB, agentID, token string) mesh.TaskRun {
	t.Helper()
	return p.Pull(t, agentID, token, "").Expect(t, http.StatusOK).Run(t)
}

// HeldRun brings a new runtime of agentID online, creates a task run for
// the agent and has the runtime claim it: the run is running, held by the
// runtime returned.
func (p *Platform) HeldRun(t testing.TB, agentID, text string) (Attached, mesh.TaskRun) {
	t.Helper()
	rt := p.OnlineRuntime(t, agentID)
	run := p.CreateTask(agentID, text)
	if got := p.PullRun(t, agentID, rt.RuntimeToken); got.ID != run.ID {
		t.Fatalf("the runtime was handed run %s, want the one just created (%s)", got.ID, run.ID)
	}
	return rt, p.GetTask(run.ID)
}

// Report posts a runtime report (progress, renew, complete, fail) on a run
// and returns the raw answer.
func (p *Platform) Report(t testing.TB, runID, op, token string, body any) *Response {
	t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	return p.Send(t, Request{Method: http.MethodPost, Path: fmt.Sprintf("/task-runs/%s/%s", runID, op), RuntimeToken: token, JSON: body})
}

// CreateTaskWith creates a task run from a full request body and returns the
// raw answer.
func (p *Platform) CreateTaskWith(t testing.TB, body any) *Response {
	t.Helper()
	return p.Send(t, Request{Method: http.MethodPost, Path: "/task-runs", Owner: true, JSON: body})
}

// RuntimeViews lists an agent's runtimes as people see them.
func (p *Platform) RuntimeViews(t testing.TB, agentID string) []mesh.RuntimeView {
	t.Helper()
	var l struct {
		Runtimes []mesh.RuntimeView `json:"runtimes"`
	}
	p.Send(t, Request{Method: http.MethodGet, Path: "/agent-accounts/" + agentID + "/runtimes", Owner: true}).
		Expect(t, http.StatusOK).Decode(t, &l)
	return l.Runtimes
}

// RuntimeView returns one runtime of an agent as people see it.
func (p *Platform) RuntimeView(t testing.TB, agentID, runtimeID string) mesh.RuntimeView {
	t.Helper()
	for _, v := range p.RuntimeViews(t, agentID) {
		if v.RuntimeID == runtimeID {
			return v
		}
	}
	t.Fatalf("runtime %s is not listed for agent %s", runtimeID, agentID)
	return mesh.RuntimeView{}
}

// WaitRuntimeView polls an agent's runtime list until runtimeID is listed
// and cond holds, and returns the view. The list is served by the registry
// from its directory of runtimes, which follows the credential service's writes
// over the bus a moment later: a read right after an attach, re-pair or
// revoke waits for it.
func (p *Platform) WaitRuntimeView(t testing.TB, agentID, runtimeID string, cond func(mesh.RuntimeView) bool) mesh.RuntimeView {
	t.Helper()
	var last mesh.RuntimeView
	listed := false
	Eventually(t, 5*time.Second, func() bool {
		for _, v := range p.RuntimeViews(t, agentID) {
			if v.RuntimeID == runtimeID {
				last, listed = v, true
				return cond(v)
			}
		}
		return false
	}, func() string {
		if !listed {
			return fmt.Sprintf("runtime %s is never listed for agent %s", runtimeID, agentID)
		}
		return fmt.Sprintf("runtime %s never matched; last seen %+v", runtimeID, last)
	})
	return last
}

// Listed matches any runtime view: WaitRuntimeView(…, Listed) waits until
// the runtime appears.
func Listed(mesh.RuntimeView) bool { return true }

// shown is the body as a failure message may show it: without credentials.
func (r *Response) shown() string { return MaskCredentials(string(r.Body)) }

// credentialPattern matches every credential the platform issues, by the
// prefixes of package secret.
var credentialPattern = regexp.MustCompile(`a2a(rt|own|con|key|login|web|ptn)_[A-Za-z0-9_-]+`)

// MaskCredentials replaces every platform credential in text, so a test's
// failure message never prints one.
func MaskCredentials(text string) string {
	return credentialPattern.ReplaceAllString(text, "[credential]")
}
