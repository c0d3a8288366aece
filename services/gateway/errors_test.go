package gateway_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// routeFixture is a platform with one agent, an online runtime holding a
// running run, and a pending run: enough for every route to have a real target.
type routeFixture struct {
	p       *meshtest.Platform
	agent   mesh.Agent
	rt      meshtest.Attached
	running mesh.TaskRun
	pending mesh.TaskRun
	conv    string
}

func newRouteFixture(t *testing.T) *routeFixture {
	// The held run and its runtime stay held and online for the whole
	// test, however slow the machine: a lease or presence that ran out
	// between two requests would answer 409 where the body is checked.
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease, c.HeartbeatTimeout = time.Minute, time.Minute })
	f := &routeFixture{p: p, agent: p.CreateAgent("routes")}
	f.rt, f.running = p.HeldRun(t, f.agent.ID, "running")
	f.pending = p.CreateTask(f.agent.ID, "pending")
	f.conv = f.running.ConversationID
	return f
}

// bodyRoute is a route that reads a JSON body, with a body it accepts.
type bodyRoute struct {
	name    string
	method  string
	path    string
	people  bool
	runtime bool
	valid   string
}

func (f *routeFixture) bodyRoutes() []bodyRoute {
	a, run, pend := f.agent.ID, f.running.ID, f.pending.ID
	return []bodyRoute{
		{"create agent", http.MethodPost, "/agent-accounts", true, false, `{"name":"n"}`},
		{"update agent", http.MethodPatch, "/agent-accounts/" + a, true, false, `{"description":"d"}`},
		{"pairing code", http.MethodPost, "/agent-accounts/" + a + "/pairing-codes", true, false, `{}`},
		{"create conversation", http.MethodPost, "/conversations", true, false, `{}`},
		{"create task run", http.MethodPost, "/task-runs", true, false, `{"target_agent_id":"` + a + `","input":{"text":"t"}}`},
		{"cancel", http.MethodPost, "/task-runs/" + pend + "/cancel", true, false, `{"reason":"r"}`},
		{"attach", http.MethodPost, "/agent-runtimes/runtime/attach-via-pairing", false, false, `{"pairing_token":"x"}`},
		{"heartbeat", http.MethodPost, "/agent-runtimes/runtime/heartbeat", false, true, `{}`},
		{"progress", http.MethodPost, "/task-runs/" + run + "/progress", false, true, `{"message":"m"}`},
		{"renew", http.MethodPost, "/task-runs/" + run + "/renew", false, true, `{}`},
		{"complete", http.MethodPost, "/task-runs/" + run + "/complete", false, true, `{"output":{}}`},
		{"fail", http.MethodPost, "/task-runs/" + run + "/fail", false, true, `{"output":{"error":"e"}}`},
		{"artifact", http.MethodPost, "/task-runs/" + run + "/artifacts", false, true, `{"filename":"a.txt","content_text":"x"}`},
	}
}

func (f *routeFixture) send(t *testing.T, r bodyRoute, body []byte, contentType string) *meshtest.Response {
	t.Helper()
	req := meshtest.Request{Method: r.method, Path: r.path, Owner: r.people, Body: body, ContentType: contentType}
	if r.runtime {
		req.RuntimeToken = f.rt.RuntimeToken
	}
	return f.p.Send(t, req)
}

// TestBadInput_BodiesAreCheckedOnEveryRoute sends each route that reads a
// body the mistakes clients make, and checks that nothing was changed.
func TestBadInput_BodiesAreCheckedOnEveryRoute(t *testing.T) {
	t.Parallel()
	f := newRouteFixture(t)
	big := `{"name":"` + strings.Repeat("x", 1<<20) + `"}`
	for _, r := range f.bodyRoutes() {
		t.Run(r.name, func(t *testing.T) {
			for _, body := range []string{`{"name": `, `{"output":{"error":"x"}`} {
				e := f.send(t, r, []byte(body), "application/json").ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
				if !strings.Contains(e.Error.Message, "JSON") || !strings.Contains(e.Error.Message, "ends too early") {
					t.Errorf("truncated JSON: message %q does not say what is wrong", e.Error.Message)
				}
			}
			e := f.send(t, r, []byte(`{"name":`+"\x01"+`}`), "application/json").ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
			if !strings.Contains(e.Error.Message, "syntax error at byte") {
				t.Errorf("bad byte: message %q does not locate the error", e.Error.Message)
			}
			e = f.send(t, r, []byte(`["a JSON array"]`), "application/json").ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
			if !strings.Contains(e.Error.Message, "JSON object") {
				t.Errorf("array body: message %q does not ask for an object", e.Error.Message)
			}
			f.send(t, r, []byte(r.valid+` {"again":1}`), "application/json").ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
			if r.name != "artifact" { // artifacts have their own, larger limit (artifacts_test.go)
				f.send(t, r, []byte(big), "application/json").ExpectError(t, http.StatusRequestEntityTooLarge, mesh.CodePayloadTooLarge)
			}
			for _, ct := range []string{"text/plain", "", "application/x-www-form-urlencoded", "application/json-seq", "not a media type"} {
				f.send(t, r, []byte(r.valid), ct).ExpectError(t, http.StatusUnsupportedMediaType, mesh.CodeUnsupportedMedia)
			}
		})
	}
	// None of the rejected requests changed anything.
	if got := f.p.GetTask(f.running.ID); got.Status != mesh.StatusRunning || got.Progress != nil || len(got.Artifacts) != 0 {
		t.Fatalf("running run changed by rejected requests: %+v", got)
	}
	if got := f.p.GetTask(f.pending.ID); got.Status != mesh.StatusPending {
		t.Fatalf("pending run is %s after rejected cancels", got.Status)
	}
	var agents struct {
		Agents []mesh.Agent `json:"agents"`
	}
	f.p.Do(http.MethodGet, "/agent-accounts", nil, &agents)
	if len(agents.Agents) != 1 || agents.Agents[0].Description != "" {
		t.Fatalf("agents after rejected creates and updates: %+v", agents.Agents)
	}
}

// TestBadInput_UnknownFieldsAreNamedOnPeopleRoutesAndIgnoredOnRuntimeRoutes:
// a typo in a person's request must not pass silently, while runtimes of
// other versions keep working (seed 001 runtimes send fields we do not know).
func TestBadInput_UnknownFieldsAreNamedOnPeopleRoutesAndIgnoredOnRuntimeRoutes(t *testing.T) {
	t.Parallel()
	f := newRouteFixture(t)
	for _, r := range f.bodyRoutes() {
		if !r.people {
			continue
		}
		t.Run(r.name, func(t *testing.T) {
			body := strings.TrimSuffix(r.valid, "}")
			if body != "{" {
				body += ","
			}
			body += `"nmae":"typo"}`
			e := f.send(t, r, []byte(body), "application/json").ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
			if !strings.Contains(e.Error.Message, `"nmae"`) {
				t.Errorf("message %q does not name the unknown field", e.Error.Message)
			}
		})
	}
	hb := bodyRoute{method: http.MethodPost, path: "/agent-runtimes/runtime/heartbeat", runtime: true}
	f.send(t, hb, []byte(`{"agent_id":"`+f.agent.ID+`","runtime_version":"9.9","capabilities":["x"]}`), "application/json").Expect(t, http.StatusOK)
	progress := bodyRoute{method: http.MethodPost, path: "/task-runs/" + f.running.ID + "/progress", runtime: true}
	f.send(t, progress, []byte(`{"message":"m","stage":"compiling"}`), "application/json; charset=utf-8").Expect(t, http.StatusOK)
	// Media types with parameters and +json suffixes are JSON too.
	create := bodyRoute{method: http.MethodPost, path: "/agent-accounts", people: true}
	f.send(t, create, []byte(`{"name":"typed"}`), "application/vnd.a2amesh+json; charset=utf-8").Expect(t, http.StatusCreated)
}

// TestAuth_PeopleRoutesNeedTheOwnerCredential tries every people route with
// no credential and with each wrong one.
func TestAuth_PeopleRoutesNeedTheOwnerCredential(t *testing.T) {
	t.Parallel()
	f := newRouteFixture(t)
	id := mesh.NewID()
	routes := []struct{ method, path string }{
		{http.MethodPost, "/agent-accounts"},
		{http.MethodGet, "/agent-accounts"},
		{http.MethodGet, "/agent-accounts/" + f.agent.ID},
		{http.MethodPatch, "/agent-accounts/" + f.agent.ID},
		{http.MethodPost, "/agent-accounts/" + f.agent.ID + "/pairing-codes"},
		{http.MethodGet, "/agent-accounts/" + f.agent.ID + "/runtimes"},
		{http.MethodPost, "/agent-runtimes/" + f.rt.RuntimeID + "/revoke"},
		{http.MethodPost, "/conversations"},
		{http.MethodGet, "/conversations/" + f.conv},
		{http.MethodPost, "/task-runs"},
		{http.MethodGet, "/task-runs"},
		{http.MethodGet, "/task-runs/" + f.running.ID},
		{http.MethodPost, "/task-runs/" + f.pending.ID + "/cancel"},
		{http.MethodGet, "/task-runs/" + f.running.ID + "/artifacts"},
		{http.MethodGet, "/artifacts/" + id},
		{http.MethodGet, "/artifacts/" + id + "/content"},
		{http.MethodGet, "/events"},
	}
	creds := map[string]http.Header{
		"none":                     {},
		"wrong bearer":             {"Authorization": {"Bearer a2aown_not-the-owner-token"}},
		"empty bearer":             {"Authorization": {"Bearer "}},
		"basic scheme":             {"Authorization": {"Basic " + f.p.OwnerToken}},
		"runtime token as bearer":  {"Authorization": {"Bearer " + f.rt.RuntimeToken}},
		"runtime token header":     {"X-Runtime-Token": {f.rt.RuntimeToken}},
		"owner token, no scheme":   {"Authorization": {f.p.OwnerToken}},
		"owner token with a typo":  {"Authorization": {"Bearer " + f.p.OwnerToken + "x"}},
		"owner token in the query": {},
	}
	for _, r := range routes {
		for name, h := range creds {
			path := r.path
			if name == "owner token in the query" {
				path += "?token=" + url.QueryEscape(f.p.OwnerToken)
			}
			resp := f.p.Send(t, meshtest.Request{Method: r.method, Path: path, Header: h, JSON: map[string]any{}})
			e := resp.ExpectError(t, http.StatusUnauthorized, mesh.CodeUnauthorized)
			if strings.Contains(e.Error.Message, f.p.OwnerToken) || strings.Contains(e.Error.Message, f.rt.RuntimeToken) {
				t.Fatalf("%s %s (%s): the error echoes a credential", r.method, r.path, name)
			}
		}
	}
	// Nothing was done on behalf of the refused callers.
	f.p.Heartbeat(t, f.rt.RuntimeToken) // still the agent's runtime
	if v := f.p.RuntimeView(t, f.agent.ID, f.rt.RuntimeID); v.State != mesh.RuntimeActive {
		t.Fatalf("runtime is %s after refused revokes", v.State)
	}
	if got := f.p.GetTask(f.pending.ID); got.Status != mesh.StatusPending {
		t.Fatalf("pending run is %s after refused cancels", got.Status)
	}
}

// TestAuth_RuntimeRoutesNeedARuntimeToken tries every runtime route with no
// token and with wrong ones (including the owner's).
func TestAuth_RuntimeRoutesNeedARuntimeToken(t *testing.T) {
	t.Parallel()
	f := newRouteFixture(t)
	run := f.running.ID
	routes := []string{
		"/agent-runtimes/runtime/heartbeat",
		"/agent-runtimes/runtime/revoke",
		"/agent-accounts/" + f.agent.ID + "/task-runs/pull",
		"/task-runs/" + run + "/progress",
		"/task-runs/" + run + "/renew",
		"/task-runs/" + run + "/complete",
		"/task-runs/" + run + "/fail",
		"/task-runs/" + run + "/artifacts",
	}
	creds := map[string]http.Header{
		"none":                  {},
		"empty":                 {"X-Runtime-Token": {"  "}},
		"wrong":                 {"X-Runtime-Token": {"a2art_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}},
		"truncated":             {"X-Runtime-Token": {f.rt.RuntimeToken[:len(f.rt.RuntimeToken)-1]}},
		"owner token":           {"X-Runtime-Token": {f.p.OwnerToken}},
		"owner bearer only":     {"Authorization": {"Bearer " + f.p.OwnerToken}},
		"runtime token, bearer": {"Authorization": {"Bearer " + f.rt.RuntimeToken}},
	}
	for _, path := range routes {
		for name, h := range creds {
			resp := f.p.Send(t, meshtest.Request{Method: http.MethodPost, Path: path, Header: h, JSON: map[string]any{"output": map[string]any{"error": "x"}}})
			if resp.Status != http.StatusUnauthorized {
				t.Fatalf("POST %s with %s credential: HTTP %d, want 401; body %s", path, name, resp.Status, resp.Body)
			}
			e := resp.Err(t)
			if e.Error.Code != string(mesh.CodeUnauthorized) {
				t.Fatalf("POST %s with %s credential: code %s", path, name, e.Error.Code)
			}
		}
	}
	if got := f.p.GetTask(run); got.Status != mesh.StatusRunning {
		t.Fatalf("run is %s after refused reports", got.Status)
	}
	f.p.Heartbeat(t, f.rt.RuntimeToken)
}

// TestBadInput_UnknownIDsAre404 names things that do not exist, well-formed
// and malformed, on every route that takes an id.
func TestBadInput_UnknownIDsAre404(t *testing.T) {
	t.Parallel()
	f := newRouteFixture(t)
	for _, id := range []string{mesh.NewID(), "not-an-id", "..%2F..%2Fetc", strings.Repeat("f", 300)} {
		people := []struct{ method, path string }{
			{http.MethodGet, "/agent-accounts/" + id},
			{http.MethodPatch, "/agent-accounts/" + id},
			{http.MethodPost, "/agent-accounts/" + id + "/pairing-codes"},
			{http.MethodGet, "/agent-accounts/" + id + "/runtimes"},
			{http.MethodPost, "/agent-runtimes/" + id + "/revoke"},
			{http.MethodGet, "/conversations/" + id},
			{http.MethodGet, "/task-runs/" + id},
			{http.MethodPost, "/task-runs/" + id + "/cancel"},
			{http.MethodGet, "/task-runs/" + id + "/artifacts"},
			{http.MethodGet, "/artifacts/" + id},
			{http.MethodGet, "/artifacts/" + id + "/content"},
		}
		for _, r := range people {
			f.p.Send(t, meshtest.Request{Method: r.method, Path: r.path, Owner: true, JSON: map[string]any{}}).
				ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
		}
		for _, op := range []string{"progress", "renew", "complete", "fail", "artifacts"} {
			f.p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + id + "/" + op, RuntimeToken: f.rt.RuntimeToken,
				JSON: map[string]any{"output": map[string]any{"error": "x"}, "filename": "a.txt", "content_text": "x"}}).
				ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
		}
		f.p.CreateTaskWith(t, map[string]any{"target_agent_id": id, "input": map[string]any{}}).ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
		f.p.CreateTaskWith(t, map[string]any{"target_agent_id": f.agent.ID, "conversation_id": id, "input": map[string]any{}}).
			ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
	}
	// A runtime naming an agent that is not its own is refused, not told whether it exists.
	f.p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts/" + mesh.NewID() + "/task-runs/pull", RuntimeToken: f.rt.RuntimeToken}).
		ExpectError(t, http.StatusForbidden, mesh.CodeForbidden)
}

// TestRouting_UnknownRoutesAndWrongMethodsAnswerJSON checks the mux's own
// answers are the API's error shape too.
func TestRouting_UnknownRoutesAndWrongMethodsAnswerJSON(t *testing.T) {
	t.Parallel()
	f := newRouteFixture(t)
	for _, path := range []string{"/nope", "/task-runs/" + f.running.ID + "/explode", "/agent-accounts/" + f.agent.ID + "/x/y", "/v1/task-runs"} {
		for _, owner := range []bool{false, true} {
			e := f.p.Send(t, meshtest.Request{Method: http.MethodGet, Path: path, Owner: owner}).ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
			if !strings.Contains(e.Error.Message, "no route") {
				t.Errorf("GET %s: message %q", path, e.Error.Message)
			}
		}
	}
	cases := []struct {
		method, path string
		allow        []string
	}{
		{http.MethodDelete, "/task-runs", []string{"GET", "POST"}},
		{http.MethodPut, "/agent-accounts/" + f.agent.ID, []string{"GET", "PATCH"}},
		{http.MethodGet, "/agent-runtimes/runtime/heartbeat", []string{"POST"}},
		{http.MethodGet, "/task-runs/" + f.running.ID + "/complete", []string{"POST"}},
		{http.MethodPost, "/healthz", []string{"GET"}},
		{http.MethodDelete, "/artifacts/" + mesh.NewID(), []string{"GET"}},
	}
	for _, c := range cases {
		resp := f.p.Send(t, meshtest.Request{Method: c.method, Path: c.path, Owner: true})
		resp.ExpectError(t, http.StatusMethodNotAllowed, mesh.CodeMethodNotAllowed)
		allow := resp.Header.Get("Allow")
		for _, m := range c.allow {
			if !strings.Contains(allow, m) {
				t.Errorf("%s %s: Allow %q lacks %s", c.method, c.path, allow, m)
			}
		}
	}
}

// TestBadInput_QueryParametersAreChecked covers the routes that read their
// input from the URL or headers instead of a body.
func TestBadInput_QueryParametersAreChecked(t *testing.T) {
	t.Parallel()
	f := newRouteFixture(t)
	owner := []struct {
		path   string
		header http.Header
	}{
		{"/task-runs?limit=abc", nil},
		{"/task-runs?limit=-1", nil},
		{"/task-runs?limit=100000", nil},
		{"/task-runs?status=sleeping", nil},
		{"/task-runs?cursor=not-a-cursor", nil},
		{"/events?agent_id=nope", nil},
		{"/events?task_run_id=nope", nil},
		{"/events?since=yesterday", nil},
		{"/events?since=-5m", nil},
		{"/events?type=task_run.exploded", nil},
		{"/events", http.Header{"Last-Event-ID": {"abc"}}},
	}
	for _, r := range owner {
		f.p.Send(t, meshtest.Request{Method: http.MethodGet, Path: r.path, Owner: true, Header: r.header}).
			ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
	}
	for _, wait := range []string{"abc", "-1s", "1x"} {
		f.p.Pull(t, f.agent.ID, f.rt.RuntimeToken, wait).ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
	}
	f.p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts/" + f.agent.ID + "/pairing-codes", Owner: true,
		JSON: map[string]any{"ttl_seconds": -1}}).ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
}

// TestBadInput_RejectedTaskCreateWritesNothing: a create refused for any
// reason leaves no run, no conversation, no idempotency key and no event.
func TestBadInput_RejectedTaskCreateWritesNothing(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("strict")
	events := p.StreamEvents(t, url.Values{"agent_id": {agent.ID}})
	before := bucketSizes(t, p)
	key := "create-once"
	base := func(extra map[string]any) map[string]any {
		b := map[string]any{"target_agent_id": agent.ID, "input": map[string]any{"text": "t"}, "idempotency_key": key}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	cases := []struct {
		name   string
		body   map[string]any
		status int
	}{
		{"unknown agent", base(map[string]any{"target_agent_id": mesh.NewID()}), http.StatusNotFound},
		{"malformed agent", base(map[string]any{"target_agent_id": "agent-7"}), http.StatusNotFound},
		{"no agent", base(map[string]any{"target_agent_id": ""}), http.StatusBadRequest},
		{"no input", base(map[string]any{"input": nil}), http.StatusBadRequest},
		{"text input", base(map[string]any{"input": "just text"}), http.StatusBadRequest},
		{"array input", base(map[string]any{"input": []string{"a"}}), http.StatusBadRequest},
		{"bad task type", base(map[string]any{"task_type": "Not A Type"}), http.StatusBadRequest},
		{"too many attempts", base(map[string]any{"max_attempts": 11}), http.StatusBadRequest},
		{"negative attempts", base(map[string]any{"max_attempts": -1}), http.StatusBadRequest},
		{"past deadline", base(map[string]any{"deadline": time.Now().Add(-time.Minute)}), http.StatusBadRequest},
		{"deadline and timeout", base(map[string]any{"deadline": time.Now().Add(time.Hour), "timeout_seconds": 5}), http.StatusBadRequest},
		{"negative timeout", base(map[string]any{"timeout_seconds": -5}), http.StatusBadRequest},
		{"unknown conversation", base(map[string]any{"conversation_id": mesh.NewID()}), http.StatusNotFound},
		{"unknown initiator", base(map[string]any{"initiator_agent_id": mesh.NewID()}), http.StatusNotFound},
		{"huge metadata", base(map[string]any{"metadata": map[string]any{"blob": strings.Repeat("m", 17<<10)}}), http.StatusBadRequest},
		{"huge key", base(map[string]any{"idempotency_key": strings.Repeat("k", 256)}), http.StatusBadRequest},
		{"unknown field", base(map[string]any{"priority": "high"}), http.StatusBadRequest},
		{"body too large", base(map[string]any{"input": map[string]any{"text": strings.Repeat("x", 1<<20)}}), http.StatusRequestEntityTooLarge},
	}
	for _, tc := range cases {
		resp := p.CreateTaskWith(t, tc.body)
		if resp.Status != tc.status {
			t.Errorf("%s: HTTP %d, want %d: %s", tc.name, resp.Status, tc.status, resp.Body)
			continue
		}
		resp.Err(t)
	}
	if after := bucketSizes(t, p); after != before {
		t.Fatalf("rejected creates wrote records: before %+v, after %+v", before, after)
	}
	// The key was never taken: the first accepted create with it creates.
	run := p.CreateTaskWith(t, base(nil)).Expect(t, http.StatusCreated).Run(t)
	if ev := events.Next(t, 5*time.Second); ev.Type != mesh.EventTaskRunCreated || ev.Subject != run.ID {
		t.Fatalf("first event after the rejected creates: %s about %s, want the accepted run's creation", ev.Type, ev.Subject)
	}
}

type sizes struct{ runs, conversations, idempotency int }

func bucketSizes(t *testing.T, p *meshtest.Platform) sizes {
	t.Helper()
	return sizes{p.KeyCount(t, bus.BucketRuns), p.KeyCount(t, bus.BucketConversations), p.KeyCount(t, bus.BucketIdempotency)}
}
