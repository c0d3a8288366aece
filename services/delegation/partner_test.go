package delegation_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/partnerapi"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// fakePartner is a partner platform speaking seed 003's routes: it takes
// tasks (each gets the next remote id) and records every call.
type fakePartner struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []partnerCall
	next  int
}

type partnerCall struct {
	path, apiKey string
	body         map[string]any
}

func startFakePartner(t *testing.T) *fakePartner {
	f := &fakePartner{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		f.mu.Lock()
		f.calls = append(f.calls, partnerCall{path: r.URL.Path, apiKey: r.Header.Get("X-API-Key"), body: body})
		f.next++
		id := "remote-" + strconv.Itoa(f.next)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/a2a/task":
			_ = json.NewEncoder(w).Encode(map[string]any{"taskId": id, "state": "submitted", "method": body["method"],
				"createdAt": time.Now().UTC().Format(time.RFC3339), "updatedAt": time.Now().UTC().Format(time.RFC3339)})
		case "/a2a/message":
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": body["id"], "result": map[string]any{"state": "canceled"}})
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakePartner) callsTo(path string) []partnerCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []partnerCall
	for _, c := range f.calls {
		if c.path == path {
			out = append(out, c)
		}
	}
	return out
}

// callback posts a partner's callback, signed with secret (unless empty).
func callback(t *testing.T, p *meshtest.Platform, partnerID, secret string, at time.Time, body map[string]any) *meshtest.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	h := http.Header{}
	if partnerID != "" {
		ts := strconv.FormatInt(at.Unix(), 10)
		h.Set(partnerapi.HeaderPartnerID, partnerID)
		h.Set(partnerapi.HeaderTimestamp, ts)
		if secret != "" {
			h.Set(partnerapi.HeaderSignature, partnerapi.Sign(secret, ts, b))
		}
	}
	return p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a/webhook", Body: b, ContentType: "application/json", Header: h})
}

// TestPartner_DelegatedTaskFollowsSignedCallbacks: a rule sends A's task to
// a registered partner (seed 003 POST /a2a/task, with the partner's API
// key); the partner's signed callbacks move A's run by seed 003's state
// machine; unknown partners, bad signatures and stale callbacks are
// refused; canceling A's run cancels the partner's task.
func TestPartner_DelegatedTaskFollowsSignedCallbacks(t *testing.T) {
	t.Parallel()
	w := newWorld(t, func(c *platform.Config) { c.AllowPrivateWebhooks = true }, "A")
	fake := startFakePartner(t)
	const partnerKey = "partner-issued-key-0123456789"
	var created meshapi.CreatePartnerResponse
	resp := w.p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a/partners", Owner: true,
		JSON: map[string]any{"name": "Storyteller", "url": fake.srv.URL, "api_key": partnerKey}}).Expect(t, http.StatusCreated)
	resp.Decode(t, &created)
	if resp.Header.Get("Cache-Control") != "no-store" || !strings.HasPrefix(created.Secret, "a2aptn_") || !created.HasAPIKey ||
		created.SecretHint != "****"+created.Secret[len(created.Secret)-4:] {
		t.Fatalf("created partner: %+v (Cache-Control %q)", created.Partner, resp.Header.Get("Cache-Control"))
	}
	list := w.p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/a2a/partners", Owner: true}).Expect(t, http.StatusOK)
	if strings.Contains(string(list.Body), created.Secret) || strings.Contains(string(list.Body), partnerKey) || !strings.Contains(string(list.Body), created.PartnerID) {
		t.Fatalf("partner list: %s", list.Body)
	}
	w.rule("A", map[string]any{"match": map[string]any{"keywords": []string{"outsource"}}, "target": map[string]any{"partner_id": created.PartnerID}})

	parent := w.task("A", "outsource this story")
	parent = w.p.WaitTask(parent.ID, 30*time.Second, func(r mesh.TaskRun) bool { return r.DelegatedTo != nil && r.DelegatedTo.RemoteTaskID != "" })
	remote := parent.DelegatedTo.RemoteTaskID
	calls := fake.callsTo("/a2a/task")
	if len(calls) != 1 || calls[0].apiKey != partnerKey || calls[0].body["clientAgentId"] != w.id("A") ||
		calls[0].body["params"].(map[string]any)["text"] != "outsource this story" || calls[0].body["method"] != "message/send" {
		t.Fatalf("the partner got %+v", calls)
	}

	now := time.Now()
	working := map[string]any{"taskId": remote, "state": "working", "progress": 50}
	for name, r := range map[string]*meshtest.Response{
		"unsigned":        callback(t, w.p, created.PartnerID, "", now, working),
		"no headers":      callback(t, w.p, "", "", now, working),
		"wrong secret":    callback(t, w.p, created.PartnerID, "not-the-secret-at-all", now, working),
		"unknown partner": callback(t, w.p, mesh.NewID(), created.Secret, now, working),
		"stale":           callback(t, w.p, created.PartnerID, created.Secret, now.Add(-time.Hour), working),
	} {
		var body struct {
			Error string `json:"error"`
			Code  int    `json:"code"`
		}
		r.Expect(t, http.StatusUnauthorized).Decode(t, &body)
		if body.Error == "" || body.Code != partnerapi.CodeAuthenticationFailed {
			t.Errorf("%s: %s", name, r.Body)
		}
	}
	if got := w.p.GetTask(parent.ID); got.Progress != nil {
		t.Fatalf("a refused callback moved the run: %+v", got.Progress)
	}
	// submitted -> completed skips working: seed 003's machine refuses it.
	jump := callback(t, w.p, created.PartnerID, created.Secret, now, map[string]any{"taskId": remote, "state": "completed"}).Expect(t, http.StatusConflict)
	if !strings.Contains(string(jump.Body), "-32003") {
		t.Fatalf("invalid transition answer: %s", jump.Body)
	}
	callback(t, w.p, created.PartnerID, created.Secret, now, map[string]any{"taskId": "remote-unknown", "state": "working"}).Expect(t, http.StatusNotFound)
	ok := callback(t, w.p, created.PartnerID, created.Secret, now, working).Expect(t, http.StatusOK)
	if strings.TrimSpace(string(ok.Body)) != `{"success":true}` {
		t.Fatalf("callback answer: %s", ok.Body)
	}
	if got := w.p.GetTask(parent.ID); got.Progress == nil || got.Progress.Percent == nil || *got.Progress.Percent != 50 || got.DelegatedTo.RemoteState != "working" {
		t.Fatalf("after working: %+v %+v", got.Progress, got.DelegatedTo)
	}
	done := map[string]any{"taskId": remote, "state": "completed", "result": map[string]any{"text": "a story, told remotely"}}
	callback(t, w.p, created.PartnerID, created.Secret, now, done).Expect(t, http.StatusOK)
	callback(t, w.p, created.PartnerID, created.Secret, now, done).Expect(t, http.StatusOK) // repeated: no change
	callback(t, w.p, created.PartnerID, created.Secret, now, working).Expect(t, http.StatusConflict)
	got := w.ended(parent.ID)
	if got.Status != mesh.StatusCompleted || text(got) != "a story, told remotely" {
		t.Fatalf("parent: %s %q %+v", got.Status, text(got), got.Error)
	}
	var tree meshapi.TraceNode
	w.p.Do(http.MethodGet, "/task-runs/"+parent.ID+"/trace", nil, &tree)
	if len(tree.Children) != 1 || tree.Children[0].PartnerID != created.PartnerID || tree.Children[0].RemoteTaskID != remote || tree.Children[0].Status != "completed" {
		t.Fatalf("trace: %+v", tree)
	}

	// Canceling a run delegated out cancels the partner's task.
	second := w.task("A", "outsource another")
	second = w.p.WaitTask(second.ID, 30*time.Second, func(r mesh.TaskRun) bool { return r.DelegatedTo != nil && r.DelegatedTo.RemoteTaskID != "" })
	w.p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + second.ID + "/cancel", Owner: true}).Expect(t, http.StatusOK)
	meshtest.Eventually(t, 10*time.Second, func() bool { return len(fake.callsTo("/a2a/message")) == 1 }, func() string { return "the partner's task was not canceled" })
	cancel := fake.callsTo("/a2a/message")[0]
	if cancel.body["method"] != "tasks/cancel" || cancel.body["params"].(map[string]any)["taskId"] != second.DelegatedTo.RemoteTaskID {
		t.Fatalf("cancel call: %+v", cancel.body)
	}
	w.p.Send(t, meshtest.Request{Method: http.MethodDelete, Path: "/a2a/partners/" + created.PartnerID, Owner: true}).Expect(t, http.StatusNoContent)
	callback(t, w.p, created.PartnerID, created.Secret, now, working).Expect(t, http.StatusUnauthorized)
}
