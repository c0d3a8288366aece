package gateway_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestEvents_ReconnectingWithLastEventIDDeliversEveryEventExactlyOnce: a
// client that disconnects mid-task and reconnects with Last-Event-ID gets
// every event of the run exactly once, in order: the same sequence as a
// client that never disconnected.
func TestEvents_ReconnectingWithLastEventIDDeliversEveryEventExactlyOnce(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("resume")
	rt := p.OnlineRuntime(t, agent.ID)
	q := url.Values{"agent_id": {agent.ID}, "type": {"task_run.created,task_run.claimed,task_run.progress,task_run.completed"}}
	whole := p.StreamEvents(t, q)
	part := p.StreamEvents(t, q)

	run := p.CreateTask(agent.ID, "long")
	p.PullRun(t, agent.ID, rt.RuntimeToken)
	p.Report(t, run.ID, "progress", rt.RuntimeToken, map[string]any{"message": "1"}).Expect(t, http.StatusOK)
	first := part.Until(t, 10*time.Second, meshtest.TypeIs("task_run.progress", run.ID))
	part.Close()

	// While the client is away.
	for i := 2; i <= 4; i++ {
		p.Report(t, run.ID, "progress", rt.RuntimeToken, map[string]any{"message": fmt.Sprint(i)}).Expect(t, http.StatusOK)
	}
	p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "ok"}}).Expect(t, http.StatusOK)

	want := whole.Until(t, 10*time.Second, meshtest.TypeIs("task_run.completed", run.ID))
	resumed := p.StreamEventsFrom(t, q, first[len(first)-1].SSEID)
	second := resumed.Until(t, 10*time.Second, meshtest.TypeIs("task_run.completed", run.ID))
	got := append(first, second...)
	if ids(got) != ids(want) {
		t.Fatalf("with a reconnect: %s\nwithout:          %s", ids(got), ids(want))
	}
	if len(want) != 7 {
		t.Fatalf("the run has %d events (%s), want created, claimed, 4 progress, completed", len(want), ids(want))
	}
}

func ids(evs []meshtest.Event) string {
	parts := make([]string, len(evs))
	for i, e := range evs {
		parts[i] = e.SSEID + ":" + e.ID
	}
	return strings.Join(parts, " ")
}

// TestEvents_TraceParentOfTheRequestIsCarried: an event caused by a request
// that carried W3C trace context carries the same traceparent.
func TestEvents_TraceParentOfTheRequestIsCarried(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("traced")
	events := p.StreamEvents(t, url.Values{"agent_id": {agent.ID}})
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	p.CreateTask(agent.ID, "untraced")
	h := http.Header{"Traceparent": {tp}}
	created := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs", Owner: true, Header: h,
		JSON: map[string]any{"target_agent_id": agent.ID, "input": map[string]any{"text": "traced"}}}).Expect(t, http.StatusCreated).Run(t)
	evs := events.Until(t, 10*time.Second, meshtest.TypeIs("task_run.created", created.ID))
	last := evs[len(evs)-1]
	if !strings.Contains(last.Raw, `"traceparent":"`+tp+`"`) {
		t.Fatalf("event of a traced request: %s", last.Raw)
	}
	if strings.Contains(evs[0].Raw, "traceparent") {
		t.Fatalf("event of an untraced request carries a traceparent: %s", evs[0].Raw)
	}
}

// TestMetrics_ExposeRunsClaimsRuntimesEventsAndRequestsByMethodAndRoute:
// GET /metrics reports task runs by status, the claim latency, the duration
// of ended runs, runtimes online, events published and HTTP requests
// labelled by method and route pattern apart (never by raw path, so ids do
// not become series, and a method outside HTTP's own is OTHER).
func TestMetrics_ExposeRunsClaimsRuntimesEventsAndRequestsByMethodAndRoute(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("measured")
	rt := p.OnlineRuntime(t, agent.ID)
	run := p.CreateTask(agent.ID, "count me")
	p.CreateTask(agent.ID, "pending one")
	p.PullRun(t, agent.ID, rt.RuntimeToken)
	p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "ok"}}).Expect(t, http.StatusOK)
	p.GetTask(run.ID)
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs/" + mesh.NewID(), Owner: true}).Expect(t, http.StatusNotFound)
	p.Send(t, meshtest.Request{Method: "BREW", Path: "/task-runs", Owner: true})

	var body string
	want := []string{
		`a2amesh_task_runs{status="completed"} 1`,
		`a2amesh_task_runs{status="pending"} 1`,
		`a2amesh_task_runs{status="running"} 0`,
		`a2amesh_claim_latency_seconds_count 1`,
		`a2amesh_runtimes_online 1`,
		`a2amesh_events_published_total{service="taskqueue",type="dev.a2amesh.task_run.completed"} 1`,
		`a2amesh_events_published_total{service="agents",type="dev.a2amesh.agent.created"} 1`,
		`a2amesh_task_run_duration_seconds_count{status="completed"} 1`,
		`a2amesh_http_requests_total{code="201",method="POST",route="/task-runs"} 2`,
		`a2amesh_http_requests_total{code="200",method="GET",route="/task-runs/{taskRunId}"} 1`,
		`a2amesh_http_requests_total{code="404",method="GET",route="/task-runs/{taskRunId}"} 1`,
		`a2amesh_http_requests_total{code="200",method="POST",route="/task-runs/{taskRunId}/complete"} 1`,
		`a2amesh_http_requests_total{code="405",method="OTHER",route="unmatched"} 1`,
		`a2amesh_http_request_duration_seconds_count{method="POST",route="/task-runs"} 2`,
	}
	meshtest.Eventually(t, 5*time.Second, func() bool {
		resp := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/metrics"}).Expect(t, http.StatusOK)
		body = string(resp.Body)
		for _, w := range want {
			if !strings.Contains(body, w+"\n") {
				return false
			}
		}
		return strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain")
	}, func() string {
		return "metrics lack one of " + strings.Join(want, "; ") + "\n" + grep(body, "a2amesh_")
	})
	if ids := regexp.MustCompile(`route="[^"]*[0-9a-f]{8}-[0-9a-f]{4}-`).FindString(body); ids != "" {
		t.Fatalf("a route label carries an id: %s", ids)
	}
	if mixed := regexp.MustCompile(`route="[A-Z]+ `).FindString(body); mixed != "" {
		t.Fatalf("a route label carries the method: %s", mixed)
	}
}

func grep(text, prefix string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// TestEvents_EveryAgentsEventsOnOneServerHavePlainIDsAndResume: on a
// server in no cluster, a stream of every agent's events has the plain
// sequence of MESH_EVENTS as its ids, and one resumed from an id goes on
// right after it.
func TestEvents_EveryAgentsEventsOnOneServerHavePlainIDsAndResume(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("every")
	q := url.Values{"type": {"task_run.created"}}
	all := p.StreamEvents(t, q)
	first := p.CreateTask(agent.ID, "one")
	got := all.Until(t, 10*time.Second, meshtest.TypeIs("task_run.created", first.ID))
	last := got[len(got)-1].SSEID
	if !regexp.MustCompile(`^[0-9]+$`).MatchString(last) {
		t.Fatalf("an event of every agent's stream on one server has id %q; want a plain sequence", last)
	}
	second := p.CreateTask(agent.ID, "two")
	next := p.StreamEventsFrom(t, q, last).Next(t, 10*time.Second)
	if next.Subject != second.ID {
		t.Fatalf("resumed after %s: %s about %s; want the creation of %s", last, next.Type, next.Subject, second.ID)
	}
}
