package gateway_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/downloads"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/schemas"
	"github.com/a2amesh/a2amesh/services/gateway"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// openAPI checks real answers against schemas/openapi.json.
type openAPI struct {
	t        *testing.T
	compiler *jsonschema.Compiler
	ops      map[string]*operation // "GET /task-runs/{taskRunId}"
	mu       sync.Mutex
}

type operation struct {
	method, path string
	pattern      *regexp.Regexp
	responses    map[string]map[string]bool // status -> media types
	covered      bool
}

func loadOpenAPI(t *testing.T) *openAPI {
	b, err := schemas.File(schemas.OpenAPIFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Content map[string]json.RawMessage `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	c, err := schemas.NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	o := &openAPI{t: t, compiler: c, ops: map[string]*operation{}}
	param := regexp.MustCompile(`\{[^}]+\}`)
	for path, methods := range doc.Paths {
		for method, spec := range methods {
			op := &operation{method: strings.ToUpper(method), path: path, responses: map[string]map[string]bool{},
				pattern: regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(param.ReplaceAllString(path, "PARAM")), "PARAM", `[^/]+`) + "$")}
			for status, r := range spec.Responses {
				op.responses[status] = map[string]bool{}
				for media := range r.Content {
					op.responses[status][media] = true
				}
			}
			o.ops[op.method+" "+path] = op
		}
	}
	return o
}

// check validates one answer and marks its operation covered when it succeeded.
func (o *openAPI) check(method, path string, resp *meshtest.Response) {
	o.t.Helper()
	path, _, _ = strings.Cut(path, "?")
	var op *operation
	for _, cand := range o.ops {
		if cand.method == method && cand.pattern.MatchString(path) && (op == nil || len(cand.path) > len(op.path)) {
			op = cand
		}
	}
	// Literal segments win over parameters (/agent-runtimes/runtime/revoke
	// over /agent-runtimes/{runtimeId}/revoke), as in the router.
	for _, cand := range o.ops {
		if cand.method == method && cand.path == path {
			op = cand
		}
	}
	if op == nil {
		o.t.Fatalf("%s %s is not in the OpenAPI document", method, path)
	}
	status := strconv.Itoa(resp.Status)
	media, documented := op.responses[status]
	if !documented {
		if resp.Status < 400 {
			o.t.Fatalf("%s %s answered %d, which the document does not list (%v)", method, op.path, resp.Status, keys(op.responses))
		}
		status, media = "default", op.responses["default"]
	}
	ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	switch {
	case len(media) == 0:
		if len(bytes.TrimSpace(resp.Body)) != 0 {
			o.t.Fatalf("%s %s %d: the document says no body, got %s", method, op.path, resp.Status, resp.Body)
		}
	case media["text/event-stream"] && ct == "text/event-stream":
		// A route answering JSON or an event stream (the A2A endpoint's
		// subscribe and JSON-RPC routes) answered the stream.
	case media["application/json"]:
		if ct != "application/json" {
			o.t.Fatalf("%s %s %d: Content-Type %q, want application/json", method, op.path, resp.Status, ct)
		}
		ptr := "#/paths/" + strings.ReplaceAll(strings.ReplaceAll(op.path, "~", "~0"), "/", "~1") + "/" + strings.ToLower(method) +
			"/responses/" + status + "/content/application~1json/schema"
		s, err := o.compiler.Compile(schemas.BaseURL + schemas.OpenAPIFile + ptr)
		if err != nil {
			o.t.Fatalf("compile %s: %v", ptr, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(resp.Body))
		if err != nil {
			o.t.Fatalf("%s %s %d: not JSON: %s", method, op.path, resp.Status, resp.Body)
		}
		if err := s.Validate(doc); err != nil {
			o.t.Fatalf("%s %s %d does not match the document: %v\nbody: %s", method, op.path, resp.Status, err, meshtest.MaskCredentials(string(resp.Body)))
		}
	case media["text/event-stream"], media["text/plain"]:
		if !media[ct] {
			o.t.Fatalf("%s %s %d: Content-Type %q, want one of %v", method, op.path, resp.Status, ct, keys(media))
		}
	}
	if resp.Status < 400 {
		o.mu.Lock()
		op.covered = true
		o.mu.Unlock()
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestOpenAPI_DocumentListsExactlyTheGatewaysRoutes: a route added to the
// gateway without being documented (or documented but gone) fails here.
func TestOpenAPI_DocumentListsExactlyTheGatewaysRoutes(t *testing.T) {
	t.Parallel()
	o := loadOpenAPI(t)
	served := map[string]bool{}
	for _, r := range gateway.New(gateway.Config{}).Routes() {
		served[r] = true
		if o.ops[r] == nil {
			t.Errorf("route %q is served but not in schemas/openapi.json", r)
		}
	}
	for key := range o.ops {
		if !served[key] {
			t.Errorf("%q is in schemas/openapi.json but not served", key)
		}
	}
}

// TestOpenAPI_EveryRouteAnswersAsDocumented drives every route of the API
// for real and validates each answer (status, media type and body) against
// the OpenAPI document; every documented operation must have succeeded once.
func TestOpenAPI_EveryRouteAnswersAsDocumented(t *testing.T) {
	t.Parallel()
	o := loadOpenAPI(t)
	p := meshtest.StartPlatform(t, func(c *platform.Config) {
		c.AllowPrivateWebhooks = true
		c.WebhookRetryMin = 20 * time.Millisecond
		c.WebhookRetryMax = 50 * time.Millisecond
	})
	call := func(r meshtest.Request) *meshtest.Response {
		t.Helper()
		resp := p.Send(t, r)
		o.check(r.Method, r.Path, resp)
		return resp
	}
	owner := func(method, path string, body any) *meshtest.Response {
		t.Helper()
		return call(meshtest.Request{Method: method, Path: path, Owner: true, JSON: body})
	}
	runtime := func(method, path, token string, body any) *meshtest.Response {
		t.Helper()
		return call(meshtest.Request{Method: method, Path: path, RuntimeToken: token, JSON: body})
	}
	stream := func(path string, r meshtest.Request) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.APIBase+path, nil)
		if r.Owner {
			req.Header.Set("Authorization", "Bearer "+p.OwnerToken)
		}
		if r.RuntimeToken != "" {
			req.Header.Set("X-Runtime-Token", r.RuntimeToken)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		o.check(http.MethodGet, path, &meshtest.Response{Status: resp.StatusCode, Header: resp.Header})
	}

	call(meshtest.Request{Method: http.MethodGet, Path: "/healthz"})
	call(meshtest.Request{Method: http.MethodGet, Path: "/readyz"})
	call(meshtest.Request{Method: http.MethodGet, Path: "/metrics"})
	for _, path := range []string{"/openapi.json", "/asyncapi.json", "/schemas/openapi.json", "/schemas/events/task_run.completed.json"} {
		call(meshtest.Request{Method: http.MethodGet, Path: path})
	}
	offerDownload(t, p.DataDir, "a2a-runtime_linux_amd64", "a program")
	call(meshtest.Request{Method: http.MethodGet, Path: "/install.sh"})
	call(meshtest.Request{Method: http.MethodGet, Path: "/downloads/SHA256SUMS"})
	call(meshtest.Request{Method: http.MethodGet, Path: "/downloads/a2a-runtime_linux_amd64"})

	// The web page and its sign-in (websession_test.go).
	for _, path := range []string{"/", "/agents/" + mesh.NewID(), "/tasks", "/tasks/" + mesh.NewID(), "/integrations", "/assets/app.js", "/assets/style.css", "/assets/icon.svg"} {
		call(meshtest.Request{Method: http.MethodGet, Path: path})
	}
	var link struct {
		URL string `json:"url"`
	}
	owner(http.MethodPost, "/web/login-links", map[string]any{"ttl_seconds": 60}).Decode(t, &link)
	web := signInAt(t, p, link.URL, func(resp *meshtest.Response) { o.check(http.MethodGet, strings.TrimPrefix(link.URL, p.APIBase), resp) })
	call(meshtest.Request{Method: http.MethodGet, Path: "/web/session", Header: web.header(false)})
	call(meshtest.Request{Method: http.MethodPost, Path: "/web/logout", Header: web.header(true)})

	var agent mesh.Agent
	owner(http.MethodPost, "/agent-accounts", map[string]any{"name": "documented", "skills": []map[string]any{{"id": "s", "name": "S"}}}).Decode(t, &agent)
	owner(http.MethodGet, "/agent-accounts", nil)
	owner(http.MethodGet, "/agent-accounts/"+agent.ID, nil)
	owner(http.MethodPatch, "/agent-accounts/"+agent.ID, map[string]any{"instructions": "be brief"})
	owner(http.MethodGet, "/agent-accounts/"+mesh.NewID(), nil)
	var doomed mesh.Agent
	owner(http.MethodPost, "/agent-accounts", map[string]any{"name": "deleted"}).Decode(t, &doomed)
	owner(http.MethodDelete, "/agent-accounts/"+doomed.ID, nil)
	owner(http.MethodDelete, "/agent-accounts/"+doomed.ID, nil)
	attach := func() meshapi.AttachResponse {
		var code meshapi.PairingCode
		owner(http.MethodPost, "/agent-accounts/"+agent.ID+"/pairing-codes", map[string]any{"ttl_seconds": 60}).Decode(t, &code)
		var att meshapi.AttachResponse
		call(meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/runtime/attach-via-pairing",
			JSON: map[string]any{"pairing_token": code.PairingToken, "device_name": "doc", "local_executor": map[string]any{"type": "custom"}}}).Decode(t, &att)
		return att
	}
	spare := attach()
	owner(http.MethodPost, "/agent-runtimes/"+spare.RuntimeID+"/revoke", nil)
	rt := attach()
	tok := rt.RuntimeToken
	runtime(http.MethodPost, "/agent-runtimes/runtime/hello", tok, map[string]any{})
	runtime(http.MethodPost, "/agent-runtimes/runtime/connection", tok, map[string]any{})
	runtime(http.MethodPost, "/agent-runtimes/runtime/heartbeat", tok, map[string]any{"agent_id": agent.ID})
	owner(http.MethodGet, "/agent-accounts/"+agent.ID+"/runtimes", nil)
	stream("/events?agent_id="+agent.ID, meshtest.Request{Owner: true})
	stream("/agent-runtimes/runtime/events", meshtest.Request{RuntimeToken: tok})

	// Webhooks: a receiver that fails once, so a delivery is recorded.
	var hits sync.Mutex
	n := 0
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Lock()
		defer hits.Unlock()
		n++
		if n == 1 {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer recv.Close()
	var wh meshapi.CreateWebhookResponse
	owner(http.MethodPost, "/webhooks", map[string]any{"url": recv.URL, "agent_id": agent.ID, "types": []string{"task_run.created"}}).Decode(t, &wh)
	owner(http.MethodGet, "/webhooks", nil)
	owner(http.MethodGet, "/webhooks/"+wh.WebhookID, nil)

	var conv mesh.Conversation
	owner(http.MethodPost, "/conversations", map[string]any{"metadata": map[string]any{"k": "v"}}).Decode(t, &conv)
	owner(http.MethodGet, "/conversations/"+conv.ID, nil)
	create := func(text string) mesh.TaskRun {
		return owner(http.MethodPost, "/task-runs", map[string]any{"target_agent_id": agent.ID, "conversation_id": conv.ID, "input": map[string]any{"text": text}}).Run(t)
	}
	pull := func() mesh.TaskRun {
		// A live runtime heartbeats all along; the calls since the last
		// one may have taken longer than the heartbeat timeout.
		runtime(http.MethodPost, "/agent-runtimes/runtime/heartbeat", tok, map[string]any{"agent_id": agent.ID})
		return runtime(http.MethodPost, "/agent-accounts/"+agent.ID+"/task-runs/pull?wait=1s", tok, nil).Expect(t, http.StatusOK).Run(t)
	}
	run := create("documented work")
	owner(http.MethodGet, "/task-runs?agent_id="+agent.ID+"&limit=5", nil)
	owner(http.MethodGet, "/task-runs/"+run.ID, nil)
	pull()
	runtime(http.MethodPost, "/task-runs/"+run.ID+"/progress", tok, map[string]any{"message": "half", "percent": 50})
	runtime(http.MethodPost, "/task-runs/"+run.ID+"/renew", tok, map[string]any{"attempt": 1})
	var up struct {
		Artifact mesh.Artifact `json:"artifact"`
	}
	runtime(http.MethodPost, "/task-runs/"+run.ID+"/artifacts", tok, map[string]any{"filename": "out/report.md", "content_text": "# hi"}).Decode(t, &up)
	runtime(http.MethodPost, "/task-runs/"+run.ID+"/complete", tok, map[string]any{"output": map[string]any{"text": "done",
		"usage": map[string]any{"input_tokens": 120, "output_tokens": 30, "cached_tokens": 20, "cost_usd": 0.002, "model": "m"}}, "attempt": 1})
	owner(http.MethodGet, "/task-runs/"+run.ID, nil)
	owner(http.MethodGet, "/usage?agent_id="+agent.ID, nil)
	owner(http.MethodGet, "/usage?from=yesterday", nil)
	runtime(http.MethodPost, "/task-runs/"+run.ID+"/complete", tok, map[string]any{"output": map[string]any{"text": "again"}, "attempt": 2})
	owner(http.MethodGet, "/task-runs/"+run.ID+"/artifacts", nil)
	owner(http.MethodGet, "/artifacts/"+up.Artifact.ID, nil)
	owner(http.MethodGet, "/artifacts/"+up.Artifact.ID+"/content", nil)

	asked := create("asks a question")
	pull()
	runtime(http.MethodPost, "/task-runs/"+asked.ID+"/complete", tok, map[string]any{"output": map[string]any{"text": "which one?"}, "input_required": true, "attempt": 1})
	owner(http.MethodPost, "/task-runs/"+asked.ID+"/input", map[string]any{"text": "the first"})
	pull()
	runtime(http.MethodPost, "/task-runs/"+asked.ID+"/complete", tok, map[string]any{"output": map[string]any{"text": "done"}, "attempt": 2})

	// A step the agent's approval policy leaves to a person: the runtime
	// asks (here over REST, without waiting), the owner decides over REST.
	owner(http.MethodPatch, "/agent-accounts/"+agent.ID, map[string]any{"approval_policy": map[string]any{"default": "ask"}})
	careful := create("needs an approval")
	pull()
	runtime(http.MethodPost, "/task-runs/"+careful.ID+"/approval/ask", tok, map[string]any{"tool_use_id": "toolu_1", "tool": "Bash", "input": map[string]any{"command": "make"}})
	owner(http.MethodGet, "/task-runs/"+careful.ID, nil)
	owner(http.MethodPost, "/task-runs/"+careful.ID+"/approval", map[string]any{"decision": "allow"})
	owner(http.MethodPost, "/task-runs/"+careful.ID+"/approval", map[string]any{"decision": "allow"})
	runtime(http.MethodPost, "/task-runs/"+careful.ID+"/complete", tok, map[string]any{"output": map[string]any{"text": "made"}, "attempt": 1})

	second := create("released then failed")
	pull()
	runtime(http.MethodPost, "/task-runs/"+second.ID+"/release", tok, map[string]any{"attempt": 1})
	pull()
	runtime(http.MethodPost, "/task-runs/"+second.ID+"/fail", tok, map[string]any{"output": map[string]any{"error": "no"}})
	runtime(http.MethodPost, "/agent-accounts/"+agent.ID+"/task-runs/pull", tok, nil).Expect(t, http.StatusNoContent)
	third := create("canceled")
	owner(http.MethodPost, "/task-runs/"+third.ID+"/cancel", map[string]any{"reason": "not needed"})
	owner(http.MethodPost, "/task-runs/"+third.ID+"/cancel", nil)

	var dl meshapi.DeliveryList
	meshtest.Eventually(t, 10*time.Second, func() bool {
		owner(http.MethodGet, "/webhooks/"+wh.WebhookID+"/deliveries", nil).Decode(t, &dl)
		return len(dl.Deliveries) > 0 && dl.Deliveries[0].State == meshapi.DeliveryDelivered
	}, func() string { return fmt.Sprintf("deliveries: %+v", dl.Deliveries) })
	owner(http.MethodPost, "/webhooks/"+wh.WebhookID+"/deliveries/"+dl.Deliveries[0].DeliveryID+"/redrive", nil)
	owner(http.MethodDelete, "/webhooks/"+wh.WebhookID, nil)

	var con meshapi.CreateConsumerResponse
	owner(http.MethodPost, "/consumers", map[string]any{"name": "documented", "agent_id": agent.ID}).Decode(t, &con)
	owner(http.MethodGet, "/consumers", nil)
	owner(http.MethodDelete, "/consumers/"+con.ConsumerID, nil)
	driveA2ARoutes(t, o, p, agent.ID, tok, pull, recv.URL)
	driveEndpointRoutes(t, o, p)
	driveDelegationRoutes(t, o, p)
	runtime(http.MethodPost, "/agent-runtimes/runtime/goodbye", tok, map[string]any{})
	runtime(http.MethodPost, "/agent-runtimes/runtime/revoke", tok, nil)

	for key, op := range o.ops {
		if !op.covered {
			t.Errorf("%s never answered with success in this test", key)
		}
	}
}

// offerDownload puts a program and its checksum where the platform of
// dataDir offers downloads (its default downloads folder).
func offerDownload(t *testing.T, dataDir, name, content string) {
	t.Helper()
	dir := filepath.Join(dataDir, "downloads")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(content))
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, downloads.SumsFile), []byte(hex.EncodeToString(sum[:])+"  "+name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
