package hosts_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/fakemodel"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// Codex speaks the Responses API over a WebSocket first. Against a model
// API that serves it, a task completes over the socket alone; against one
// that refuses the upgrade, Codex says it is reconnecting, falls back to
// HTTPS, and the task completes all the same.
func TestRealCodex_ResponsesOverWebSocketAndTheFallbackToHTTPS(t *testing.T) {
	t.Parallel()
	l := newRealLab(t, "codex")
	l.start(t)
	p := l.p

	socket := p.CreateTask(l.agent.ID, "@@plain@@ Answer over the socket.")
	run := waitEnd(t, p, socket.ID, mesh.StatusCompleted)
	if out := outputOf(t, run); !strings.Contains(out.Text, "A plain answer.") {
		t.Errorf("answer %q, want the model's", out.Text)
	}
	asked := requestsWith(l.model, "Answer over the socket.")
	if len(asked) == 0 || slices.ContainsFunc(asked, func(r *fakemodel.Request) bool { return !r.WebSocket }) {
		t.Errorf("the task's model requests were not all over the WebSocket: %s", describeRequests(asked))
	}

	l.model.RefuseWebSockets()
	fallback := p.CreateTask(l.agent.ID, "@@plain@@ Answer over HTTPS.")
	events := p.StreamEvents(t, url.Values{"task_run_id": {fallback.ID}, "since": {"1m"}})
	evs := events.Until(t, waitHost, func(ev meshtest.Event) bool {
		return ev.Subject == fallback.ID && (ev.Type == mesh.EventTaskRunCompleted || ev.Type == mesh.EventTaskRunFailed)
	})
	run = waitEnd(t, p, fallback.ID, mesh.StatusCompleted)
	if out := outputOf(t, run); !strings.Contains(out.Text, "A plain answer.") {
		t.Errorf("answer %q after the fallback, want the model's", out.Text)
	}
	// Progress reports close together may be merged: any of the reconnects
	// will do.
	progress := progressMessages(evs, fallback.ID)
	for _, want := range []string{"Reconnecting... ", "Falling back from WebSockets to HTTPS"} {
		if !slices.ContainsFunc(progress, func(m string) bool { return strings.Contains(m, want) }) {
			t.Errorf("no %q among the progress of a run whose WebSocket was refused: %q", want, progress)
		}
	}
	asked = requestsWith(l.model, "Answer over HTTPS.")
	if !slices.ContainsFunc(asked, func(r *fakemodel.Request) bool { return !r.WebSocket && r.Method == http.MethodPost }) {
		t.Errorf("no POST /v1/responses after the refused WebSocket: %s", describeRequests(l.model.Requests()))
	}
	meshtest.AssertNoSecrets(t, []string{l.secret}, map[string]string{"adapter output": l.adapter.output(), "run": string(run.Output)})
}

// requestsWith returns the model requests whose body holds text.
func requestsWith(m *fakemodel.Server, text string) []*fakemodel.Request {
	var out []*fakemodel.Request
	for _, r := range m.Requests() {
		if r.Contains(text) {
			out = append(out, r)
		}
	}
	return out
}

func describeRequests(rs []*fakemodel.Request) string {
	var out []string
	for _, r := range rs {
		how := r.Method + " " + r.Path
		if r.WebSocket {
			how += " (WebSocket)"
		}
		out = append(out, how)
	}
	return strings.Join(out, ", ")
}
