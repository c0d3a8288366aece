package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/internal/tracing/tracingtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestTracing_OneRunIsOneTraceAcrossPlatformRuntimeAndAdapter: with the
// three programs pointed at one OTLP collector, a run created with a
// caller's traceparent is one trace: the platform's spans continue the
// caller's, the runtime's work on the run descends from the platform's
// claim, the adapter's run-task and host spans from the runtime's, the
// completion and the webhook delivery from the runtime's. The events carry
// the traceparent of the span that published them, the webhook POST the
// delivery's. No span holds a credential or the task's input. Over both
// transports.
func TestTracing_OneRunIsOneTraceAcrossPlatformRuntimeAndAdapter(t *testing.T) {
	eachTransport(t, func(t *testing.T, l *lab, transport string) {
		collector := tracingtest.NewCollector(t)
		otel := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.Endpoint(), "OTEL_BSP_SCHEDULE_DELAY=100"}
		p := l.startPlatform(platformOptions{env: otel, allowPrivateWebhooks: true})
		const input = "summarise the quarterly numbers"
		host := script(t, `cat >/dev/null; echo "numbers summarised"`)
		ad := l.startAdapterEnv(otel, "command", host)

		agent := p.CreateAgent("traced agent")
		m := l.newMachine()
		paired := m.pair(p.Platform, agent.ID, ad.Endpoint)
		rt := l.start("a2a-runtime start", append(m.env(), otel...), bins.Runtime,
			"start", "--log-level", "debug", "--transport", transport)
		rt.waitOutput(t, `"message":"runtime started"`, waitStart)
		waitOnline(t, p.Platform, paired.AgentID, paired.RuntimeID)

		hook := newTraceReceiver(t)
		const hookSecret = "webhook-signing-secret-0123456789"
		l.secrets.Add(hookSecret)
		p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/webhooks", Owner: true, JSON: map[string]any{
			"url": hook.srv.URL, "secret": hookSecret, "agent_id": agent.ID, "types": []string{mesh.EventTaskRunCompleted},
		}}).Expect(t, http.StatusCreated)

		const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
		run := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs", Owner: true,
			Header: http.Header{"traceparent": {"00-" + callerTrace + "-" + callerSpan + "-01"}},
			JSON:   map[string]any{"target_agent_id": agent.ID, "input": map[string]any{"text": input}},
		}).Expect(t, http.StatusCreated).Run(t)
		waitEnded(t, p.Platform, run.ID, mesh.StatusCompleted, waitStart)

		var tr trace
		meshtest.Eventually(t, waitStart, func() bool {
			tr = newTrace(collector.Spans(), callerTrace)
			return tr.has("a2a-platform", "taskqueue runtime_complete") && tr.has("a2a-platform", "webhook delivery") &&
				tr.has("a2a-runtime", "runtime task run") && tr.has("a2a-adapter", "adapter host command") &&
				tr.has("a2a-adapter", "adapter run-task") && tr.whole(callerSpan)
		}, func() string { return "the collector has not got the whole trace:\n" + tr.String() })

		api := tr.one(t, "a2a-platform", "POST /task-runs")
		if api.ParentID != callerSpan || api.Kind != "SPAN_KIND_SERVER" {
			t.Errorf("API span %+v: want the server span of the caller's request", api)
		}
		create := tr.one(t, "a2a-platform", "taskqueue create")
		claim := tr.one(t, "a2a-platform", "taskqueue claim")
		task := tr.one(t, "a2a-runtime", "runtime task run")
		call := tr.one(t, "a2a-runtime", "adapter run-task")
		runTask := tr.one(t, "a2a-adapter", "adapter run-task")
		hostSpan := tr.one(t, "a2a-adapter", "adapter host command")
		complete := tr.one(t, "a2a-platform", "taskqueue runtime_complete")
		delivery := tr.one(t, "a2a-platform", "webhook delivery")
		for _, link := range []struct {
			child, ancestor tracingtest.Span
		}{
			{create, api}, {claim, create}, {task, claim}, {call, task}, {runTask, call},
			{hostSpan, runTask}, {complete, task}, {delivery, complete},
		} {
			if !tr.descends(link.child, link.ancestor) {
				t.Errorf("%s/%q does not descend from %s/%q:\n%s", link.child.Service, link.child.Name,
					link.ancestor.Service, link.ancestor.Name, tr)
			}
		}
		if task.Attributes["mesh.task_run.id"] != run.ID || hostSpan.ParentID != runTask.SpanID {
			t.Errorf("runtime span %v, host span parent %s (run-task %s)", task.Attributes, hostSpan.ParentID, runTask.SpanID)
		}

		// Events carry the span that published them; the webhook POST its
		// delivery's span.
		evs := events(t, p.Platform, url.Values{"agent_id": {agent.ID}})
		wantEvent := map[string]tracingtest.Span{mesh.EventTaskRunCreated: create, mesh.EventTaskRunCompleted: complete}
		for _, ev := range evs {
			want, ok := wantEvent[ev.Type]
			if !ok || ev.Subject != run.ID {
				continue
			}
			if got := traceParentOf(t, ev); got != "00-"+want.TraceID+"-"+want.SpanID+"-01" {
				t.Errorf("%s carries traceparent %q, want the span %q (%s)", ev.Type, got, want.Name, want.SpanID)
			}
			delete(wantEvent, ev.Type)
		}
		if len(wantEvent) > 0 {
			t.Errorf("events not found: %v", wantEvent)
		}
		if got, want := hook.traceParent(), "00-"+delivery.TraceID+"-"+delivery.SpanID+"-01"; got != want {
			t.Errorf("webhook POST carried traceparent %q, want %q", got, want)
		}

		// Nothing secret, nor the input, in what was exported.
		for _, body := range collector.Bodies() {
			for name, secret := range map[string]string{"runtime token": paired.Token, "owner credential": p.OwnerToken,
				"pairing code": paired.Code, "webhook secret": hookSecret, "task input": input} {
				if bytes.Contains(body, []byte(secret)) {
					t.Errorf("the %s was exported in a span", name)
				}
			}
		}
		// The lines the runtime and the adapter log about the run carry the
		// trace id, and the id of the span they were written in.
		for _, c := range []struct {
			name, output string
			messages     []string
			span         tracingtest.Span
		}{
			{"runtime", rt.output(), []string{"task started", "task completed"}, task},
			{"adapter", ad.output(), []string{"task started", "task succeeded"}, runTask},
		} {
			for _, msg := range c.messages {
				line := meshtest.LogLine(c.output, msg)
				if line == nil || line["trace_id"] != callerTrace || line["span_id"] != c.span.SpanID {
					t.Errorf("the %s's %q line %v: want trace_id %s and span_id %s", c.name, msg, line, callerTrace, c.span.SpanID)
				}
			}
		}
		if len(rt.logLine("exporting spans over OTLP/HTTP")) == 0 {
			t.Error("the runtime did not say it exports spans")
		}
	})
}

// traceParentOf reads an event's traceparent extension.
func traceParentOf(t *testing.T, ev meshtest.Event) string {
	t.Helper()
	var ce struct {
		TraceParent string `json:"traceparent"`
	}
	if err := json.Unmarshal([]byte(ev.Raw), &ce); err != nil {
		t.Fatalf("event %s: %v", ev.ID, err)
	}
	return ce.TraceParent
}

// traceReceiver is a webhook endpoint that keeps the traceparent of the
// last delivery.
type traceReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	tp  string
}

func newTraceReceiver(t *testing.T) *traceReceiver {
	r := &traceReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.tp = req.Header.Get("traceparent")
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *traceReceiver) traceParent() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tp
}

// trace is the spans of one trace id, by span id.
type trace map[string]tracingtest.Span

func newTrace(spans []tracingtest.Span, traceID string) trace {
	tr := trace{}
	for _, s := range spans {
		if s.TraceID == traceID {
			tr[s.SpanID] = s
		}
	}
	return tr
}

func (tr trace) find(service, name string) []tracingtest.Span {
	var out []tracingtest.Span
	for _, s := range tr {
		if s.Service == service && s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func (tr trace) has(service, name string) bool { return len(tr.find(service, name)) > 0 }

// one returns the only span of a service with a name.
func (tr trace) one(t *testing.T, service, name string) tracingtest.Span {
	t.Helper()
	found := tr.find(service, name)
	if len(found) != 1 {
		t.Fatalf("%d spans %s/%q in the trace, want 1:\n%s", len(found), service, name, tr)
	}
	return found[0]
}

// whole reports whether the parent of every span is in the trace, or is
// root: a span that ends last (a request's server span, ending after what
// it called) may be exported in a later batch than its children.
func (tr trace) whole(root string) bool {
	for _, s := range tr {
		if _, ok := tr[s.ParentID]; !ok && s.ParentID != root {
			return false
		}
	}
	return true
}

// descends reports whether ancestor is on child's chain of parents.
func (tr trace) descends(child, ancestor tracingtest.Span) bool {
	for hops, s := 0, child; hops < len(tr); hops++ {
		parent, ok := tr[s.ParentID]
		if !ok {
			return false
		}
		if parent.SpanID == ancestor.SpanID {
			return true
		}
		s = parent
	}
	return false
}

// String lists the spans, for failure messages.
func (tr trace) String() string {
	var lines []string
	for _, s := range tr {
		lines = append(lines, fmt.Sprintf("  %s %s/%q parent %s", s.SpanID, s.Service, s.Name, s.ParentID))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
