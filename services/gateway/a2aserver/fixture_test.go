package a2aserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/meshapi"
)

// endpoint is a platform with an online agent (a real runtime and adapter)
// and an API key for its A2A endpoint.
type endpoint struct {
	t     testing.TB
	p     *meshtest.Platform
	agent *meshtest.OnlineAgent
	url   string
	key   string
}

type endpointOptions struct {
	platform func(*platform.Config)
	agent    meshtest.AgentOptions
}

func startEndpoint(t testing.TB, o endpointOptions) *endpoint {
	t.Helper()
	p := meshtest.StartPlatform(t, o.platform)
	a := meshtest.StartOnlineAgent(t, p, o.agent)
	d := &endpoint{t: t, p: p, agent: a, url: p.APIBase + "/a2a/" + a.Agent.ID}
	d.key = d.newKey(nil)
	return d
}

// newKey creates an API key for the endpoint's agent.
func (d *endpoint) newKey(scopes []string) string {
	d.t.Helper()
	return d.newKeyFor(d.agent.Agent.ID, scopes).APIKey
}

func (d *endpoint) newKeyFor(agentID string, scopes []string) meshapi.CreateA2AKeyResponse {
	d.t.Helper()
	var res meshapi.CreateA2AKeyResponse
	d.p.Do(http.MethodPost, "/a2a/"+agentID+"/api-keys", map[string]any{"name": "test", "scopes": scopes}, &res)
	if !strings.HasPrefix(res.APIKey, "a2akey_") {
		d.t.Fatalf("api key %q", res.APIKey)
	}
	return res
}

// keyTransport adds a credential to every request.
type keyTransport struct {
	header, value string
}

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(k.header, k.value)
	return http.DefaultTransport.RoundTrip(r)
}

func keyClient(key string) *http.Client {
	return &http.Client{Transport: keyTransport{header: "X-API-Key", value: key}, Timeout: 60 * time.Second}
}

// client returns an official Go client (a2a-go v2) for one binding and
// version, made from the agent's card as a client resolves it.
func (d *endpoint) client(version string, binding a2a.TransportProtocol) *a2aclient.Client {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resolver := &agentcard.Resolver{Client: http.DefaultClient}
	card, err := resolver.Resolve(ctx, d.url)
	if err != nil {
		d.t.Fatalf("resolve card: %v", err)
	}
	hc := keyClient(d.key)
	opts := []a2aclient.FactoryOption{
		a2aclient.WithDefaultsDisabled(),
		a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{binding}}),
	}
	if version == "1.0" {
		opts = append(opts, a2aclient.WithJSONRPCTransport(hc), a2aclient.WithRESTTransport(hc))
	} else {
		opts = append(opts, a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: hc}), a2av0.WithRESTTransport(a2av0.RESTTransportConfig{Client: hc}))
	}
	c, err := a2aclient.NewFromCard(ctx, card, opts...)
	if err != nil {
		d.t.Fatalf("client %s %s: %v", version, binding, err)
	}
	d.t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// raw is one raw HTTP call to the endpoint, for status codes, headers and exact bodies.
type raw struct {
	method, path string
	header       map[string]string
	body         string
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a *answer) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("answer %d is not a JSON object: %s", a.status, a.body)
	}
	return m
}

func (d *endpoint) do(r raw) *answer {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, d.p.APIBase+r.path, body)
	if err != nil {
		d.t.Fatal(err)
	}
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.header {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return &answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// rpc sends one JSON-RPC request with the endpoint's key and returns the answer.
func (d *endpoint) rpc(version, method string, params any) *answer {
	d.t.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	h := map[string]string{"X-API-Key": d.key}
	if version != "" {
		h["A2A-Version"] = version
	}
	return d.do(raw{method: http.MethodPost, path: "/a2a/" + d.agent.Agent.ID, header: h, body: string(b)})
}

// rpcError returns the error object of a JSON-RPC answer, failing the test
// when there is none.
func rpcError(t testing.TB, a *answer) map[string]any {
	t.Helper()
	m := a.json(t)
	e, ok := m["error"].(map[string]any)
	if !ok {
		t.Fatalf("no JSON-RPC error in %d %s", a.status, a.body)
	}
	return e
}

func textMessage(text string) *a2a.Message {
	return a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
}

// resultText is the text of a task's result artifact.
func resultText(task *a2a.Task) string {
	var b bytes.Buffer
	for _, art := range task.Artifacts {
		if art.ID != "result" {
			continue
		}
		for _, p := range art.Parts {
			b.WriteString(p.Text())
		}
	}
	return b.String()
}

// sse reads a Server-Sent Events answer and sends each data payload to
// events, closing it when the stream ends (or after a minute).
func (d *endpoint) sse(method, path, version string, events chan<- string) {
	defer close(events)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, d.p.APIBase+path, nil)
	if err != nil {
		return
	}
	req.Header.Set("X-API-Key", d.key)
	req.Header.Set("Accept", "text/event-stream")
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	readSSE(resp.Body, events)
}

// readSSE sends the data payloads of an event stream to events.
func readSSE(body io.Reader, events chan<- string) {
	buf := make([]byte, 0, 64<<10)
	chunk := make([]byte, 32<<10)
	for {
		n, err := body.Read(chunk)
		buf = append(buf, chunk[:n]...)
		for {
			i := bytes.Index(buf, []byte("\n\n"))
			if i < 0 {
				break
			}
			for _, line := range strings.Split(string(buf[:i]), "\n") {
				if data, ok := strings.CutPrefix(line, "data: "); ok {
					events <- data
				}
			}
			buf = buf[i+2:]
		}
		if err != nil {
			return
		}
	}
}
