package gateway_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// gatedBody is a request body that hands out its first n bytes and then
// waits until the answer has arrived before it ends: an endpoint that needs more
// than n bytes to answer never answers (the request's context ends), one
// that answers within n bytes does.
type gatedBody struct {
	prefix   []byte
	n, given int
	answered chan struct{}
	once     sync.Once
	// ctx ends the wait when the endpoint never answers.
	ctx context.Context
}

func newGatedBody(prefix string, n int) *gatedBody {
	return &gatedBody{prefix: []byte(prefix), n: n, answered: make(chan struct{})}
}

func (b *gatedBody) Read(p []byte) (int, error) {
	if b.given >= b.n {
		select {
		case <-b.answered:
		case <-b.ctx.Done():
		}
		return 0, io.ErrUnexpectedEOF
	}
	k := min(len(p), b.n-b.given)
	for i := range k {
		if at := b.given + i; at < len(b.prefix) {
			p[i] = b.prefix[at]
		} else {
			p[i] = 'x'
		}
	}
	b.given += k
	return k, nil
}

func (b *gatedBody) done() { b.once.Do(func() { close(b.answered) }) }

// postGated posts a JSON-RPC request whose body never ends before the answer.
func postGated(t *testing.T, url string, header http.Header, body *gatedBody) (int, http.Header, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	defer body.done()
	body.ctx = ctx
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if header != nil {
		req.Header = header.Clone()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("no answer before %d body bytes (%v): the endpoint reads more than that before it answers", body.n, err)
	}
	body.done()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// rpcErrorOf checks a JSON-RPC error answer and returns its error object.
func rpcErrorOf(t *testing.T, what string, header http.Header, body []byte, code float64, reason string) map[string]any {
	t.Helper()
	if ct := header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q", what, ct)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%s: not JSON: %s", what, body)
	}
	e, _ := m["error"].(map[string]any)
	if m["jsonrpc"] != "2.0" || e == nil || e["code"] != code || e["message"] == "" {
		t.Fatalf("%s: %s, want JSON-RPC error %v", what, body, code)
	}
	details, _ := e["data"].([]any)
	if len(details) == 0 || details[0].(map[string]any)["reason"] != reason {
		t.Errorf("%s: error data %v, want reason %s", what, e["data"], reason)
	}
	return e
}

// TestA2ABody_AuthenticatedFirstAndBounded: the A2A endpoint authenticates
// before it reads a body. A caller without a credential is refused (401)
// before the body is read; an anonymous caller of a public agent has the
// platform's 1 MiB cap; a caller with a credential the endpoint's larger one
// (inline files). A body over its cap is 413 with the endpoint's JSON-RPC
// error (or the REST error on HTTP+JSON), and creates no task.
func TestA2ABody_AuthenticatedFirstAndBounded(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	private := p.CreateAgent("private")
	public := p.CreateAgent("public")
	p.Do(http.MethodPatch, "/agent-accounts/"+public.ID, map[string]any{"public": true}, nil)
	var key meshapi.CreateA2AKeyResponse
	p.Do(http.MethodPost, "/a2a/"+private.ID+"/api-keys", map[string]any{"name": "big"}, &key)
	withKey := http.Header{"X-Api-Key": {key.APIKey}}
	meshtest.Eventually(t, 10*time.Second, func() bool {
		r := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/a2a/" + public.ID + "/agent-card"})
		var card struct {
			Security []map[string]any `json:"security"`
		}
		_ = json.Unmarshal(r.Body, &card)
		return r.Status == http.StatusOK && slices.ContainsFunc(card.Security, func(req map[string]any) bool { return len(req) == 0 })
	}, func() string { return "the public agent's card still asks every caller for a credential" })

	const cap1 = 1 << 20
	prefix := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"`

	// No credential for a private agent: 401 without reading the body
	// (net/http drains at most 256 KiB of what is left for the connection's
	// sake; 1 MiB leaves room for it).
	status, h, b := postGated(t, p.APIBase+"/a2a/"+private.ID, nil, newGatedBody(prefix, cap1))
	if status != http.StatusUnauthorized || !strings.Contains(h.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("no credential: %d %q %s", status, h.Get("WWW-Authenticate"), b)
	}
	rpcErrorOf(t, "no credential", h, b, -31401, "UNAUTHENTICATED")

	// Anonymous caller of a public agent: 413 past 1 MiB.
	status, h, b = postGated(t, p.APIBase+"/a2a/"+public.ID, nil, newGatedBody(prefix, cap1+64<<10))
	if status != http.StatusRequestEntityTooLarge {
		t.Fatalf("anonymous 1 MiB + 64 KiB: %d %s", status, b)
	}
	rpcErrorOf(t, "anonymous oversize", h, b, -31413, "PAYLOAD_TOO_LARGE")

	// A credential: over 8 MiB is 413, JSON-RPC and HTTP+JSON alike.
	status, h, b = postGated(t, p.APIBase+"/a2a/"+private.ID, withKey, newGatedBody(prefix, 8<<20+64<<10))
	if status != http.StatusRequestEntityTooLarge {
		t.Fatalf("API key, 8 MiB + 64 KiB: %d %s", status, b)
	}
	rpcErrorOf(t, "authenticated oversize", h, b, -31413, "PAYLOAD_TOO_LARGE")
	rest := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a/" + private.ID + "/message:send", Header: http.Header{"X-Api-Key": {key.APIKey}, "A2A-Version": {"1.0"}},
		ContentType: "application/json", Body: append([]byte(`{"message":{"parts":[{"text":"`), bytes.Repeat([]byte("x"), 8<<20)...)})
	var restErr struct {
		Error struct {
			Code    int              `json:"code"`
			Status  string           `json:"status"`
			Message string           `json:"message"`
			Details []map[string]any `json:"details"`
		} `json:"error"`
	}
	rest.Expect(t, http.StatusRequestEntityTooLarge).Decode(t, &restErr)
	if restErr.Error.Code != 413 || restErr.Error.Message == "" || len(restErr.Error.Details) == 0 || restErr.Error.Details[0]["reason"] != "PAYLOAD_TOO_LARGE" {
		t.Fatalf("HTTP+JSON oversize: %s", rest.Body)
	}

	// A credential may still send a file larger than 1 MiB inline.
	file := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 2<<20))
	ok := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a/" + private.ID, Header: http.Header{"X-Api-Key": {key.APIKey}, "A2A-Version": {"1.0"}},
		JSON: map[string]any{"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": map[string]any{
			"message": map[string]any{"messageId": mesh.NewID(), "role": "ROLE_USER", "parts": []any{
				map[string]any{"text": "with a file"}, map[string]any{"raw": file, "filename": "big.bin", "mediaType": "application/octet-stream"}}},
			"configuration": map[string]any{"returnImmediately": true},
		}}}).Expect(t, http.StatusOK)
	var sent map[string]any
	ok.Decode(t, &sent)
	if sent["result"] == nil {
		t.Fatalf("a 2 MiB inline file with a credential: %s", ok.Body)
	}

	// Only that one task exists.
	for agent, want := range map[string]int{private.ID: 1, public.ID: 0} {
		var list struct {
			TaskRuns []mesh.TaskRun `json:"task_runs"`
		}
		p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?agent_id=" + agent, Owner: true}).Expect(t, http.StatusOK).Decode(t, &list)
		if len(list.TaskRuns) != want {
			t.Errorf("agent %s has %d runs, want %d", agent, len(list.TaskRuns), want)
		}
	}
}
