package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// endpointsView reads one task through every endpoint and says what each thinks
// its state is, in each endpoint's own names.
type endpointsView struct {
	t     *testing.T
	p     *meshtest.Platform
	agent string
	key   string
}

func (v *endpointsView) keyed(r meshtest.Request) *meshtest.Response {
	v.t.Helper()
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set("X-API-Key", v.key)
	return v.p.Send(v.t, r).Expect(v.t, http.StatusOK)
}

// states returns each endpoint's state of the task.
func (v *endpointsView) states(id string) map[string]string {
	v.t.Helper()
	out := map[string]string{}
	out["rest"] = string(v.p.GetTask(id).Status)
	var task struct {
		State string `json:"state"`
	}
	v.keyed(meshtest.Request{Method: http.MethodGet, Path: "/a2a/status?taskId=" + id}).Decode(v.t, &task)
	out["partner"] = task.State
	var rpc struct {
		Result struct {
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		} `json:"result"`
	}
	v.keyed(meshtest.Request{Method: http.MethodPost, Path: "/a2a/" + v.agent, Header: http.Header{"A2a-Version": {"1.0"}},
		JSON: map[string]any{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": map[string]any{"id": id}}}).Decode(v.t, &rpc)
	out["a2a"] = rpc.Result.Status.State
	var ex struct {
		Executions []struct{ ID, Status string } `json:"executions"`
	}
	v.p.Send(v.t, meshtest.Request{Method: http.MethodGet, Path: "/api/executions?agentId=" + v.agent + "&limit=500", Owner: true}).Expect(v.t, http.StatusOK).Decode(v.t, &ex)
	for _, e := range ex.Executions {
		if e.ID == id {
			out["envelope"] = e.Status
		}
	}
	return out
}

// agree checks that every endpoint tells the same state, each in its names.
func (v *endpointsView) agree(id string, want mesh.Status) {
	v.t.Helper()
	a2aState := map[mesh.Status]string{mesh.StatusRunning: "TASK_STATE_WORKING", mesh.StatusCompleted: "TASK_STATE_COMPLETED", mesh.StatusCanceled: "TASK_STATE_CANCELED"}[want]
	partnerState := map[mesh.Status]string{mesh.StatusRunning: "working", mesh.StatusCompleted: "completed", mesh.StatusCanceled: "canceled"}[want]
	envState := map[mesh.Status]string{mesh.StatusRunning: "running", mesh.StatusCompleted: "success", mesh.StatusCanceled: "canceled"}[want]
	wantAll := map[string]string{"rest": string(want), "partner": partnerState, "a2a": a2aState, "envelope": envState}
	if got := v.states(id); meshtest.JSON(got) != meshtest.JSON(wantAll) {
		v.t.Fatalf("the endpoints disagree on task %s: %v, want %v", id, got, wantAll)
	}
}

// streamStates follows a stream (partner status SSE or A2A subscribe) and
// delivers every state it names, until it ends.
func streamStates(t *testing.T, p *meshtest.Platform, path string, h http.Header) <-chan string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.APIBase+path, nil)
	req.Header = h
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		cancel()
		t.Fatalf("GET %s: HTTP %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	states := regexp.MustCompile(`"state":"([A-Za-z_-]+)"`)
	out := make(chan string, 64)
	go func() {
		defer cancel()
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "data:") {
				for _, m := range states.FindAllStringSubmatch(line, -1) {
					out <- m[1]
				}
			}
		}
	}()
	t.Cleanup(cancel)
	return out
}

// last drains a stream and returns the last state it named.
func last(t *testing.T, states <-chan string) string {
	t.Helper()
	got := ""
	timeout := time.After(60 * time.Second)
	for {
		select {
		case s, ok := <-states:
			if !ok {
				return got
			}
			got = s
		case <-timeout:
			t.Fatalf("the stream did not end; last state %q", got)
		}
	}
}

// TestEndpoints_OneTaskThroughEveryEndpoint walks tasks through every endpoint: one
// created through the envelope protocol is read and streamed through the
// partner routes, the A2A endpoint, the REST API and the execution history,
// and canceled through the A2A endpoint; one created through the partner
// routes completes and every endpoint says so; one created through the A2A
// endpoint is canceled through the partner routes. All endpoints agree on the
// state at each step.
func TestEndpoints_OneTaskThroughEveryEndpoint(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	host := meshtest.NewScripted("")
	agent := meshtest.StartOnlineAgent(t, p, meshtest.AgentOptions{Name: "everywhere", Provider: host})
	var key meshapi.CreateA2AKeyResponse
	p.Do(http.MethodPost, "/a2a/"+agent.Agent.ID+"/api-keys", nil, &key)
	v := &endpointsView{t: t, p: p, agent: agent.Agent.ID, key: key.APIKey}
	keyHeader := func() http.Header { return http.Header{"X-Api-Key": {key.APIKey}, "A2a-Version": {"1.0"}} }

	// 1. Created through the envelope protocol (which waits for the end).
	answer := make(chan *meshtest.Response, 1)
	go func() {
		answer <- p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a", Header: http.Header{"X-Api-Key": {key.APIKey}}, JSON: map[string]any{
			"a2a":     map[string]any{"protocol": "a2a", "version": "1.0", "id": "walk-1", "timestamp": time.Now().UTC().Format(time.RFC3339), "type": "request"},
			"context": map[string]any{"from": "walker", "to": agent.Agent.ID},
			"payload": map[string]any{"method": "execute-agent", "params": map[string]any{"input": "wait at every endpoint"}},
		}})
	}()
	var list struct {
		Tasks []struct {
			ID string `json:"id"`
		} `json:"tasks"`
	}
	// The envelope's caller finds it through the A2A endpoint's list.
	meshtest.Eventually(t, 30*time.Second, func() bool {
		v.keyed(meshtest.Request{Method: http.MethodGet, Path: "/a2a/" + agent.Agent.ID + "/tasks", Header: keyHeader()}).Decode(t, &list)
		return len(list.Tasks) == 1
	}, func() string { return "the envelope's task is not listed by the A2A endpoint" })
	id := list.Tasks[0].ID
	p.WaitTask(id, 30*time.Second, meshtest.StatusIs(mesh.StatusRunning))
	v.agree(id, mesh.StatusRunning)
	partnerStream := streamStates(t, p, "/a2a/status?taskId="+id, http.Header{"X-Api-Key": {key.APIKey}})
	a2aStream := streamStates(t, p, "/a2a/"+agent.Agent.ID+"/tasks/"+id+":subscribe", keyHeader())
	if s := <-partnerStream; s != "working" {
		t.Fatalf("partner stream starts %q", s)
	}
	if s := <-a2aStream; s != "TASK_STATE_WORKING" {
		t.Fatalf("A2A stream starts %q", s)
	}
	v.keyed(meshtest.Request{Method: http.MethodPost, Path: "/a2a/" + agent.Agent.ID + "/tasks/" + id + ":cancel", Header: keyHeader()})
	if s := last(t, partnerStream); s != "canceled" {
		t.Fatalf("partner stream ends %q", s)
	}
	if s := last(t, a2aStream); s != "TASK_STATE_CANCELED" {
		t.Fatalf("A2A stream ends %q", s)
	}
	v.agree(id, mesh.StatusCanceled)
	var env struct {
		Payload struct {
			Error struct{ Code, Reason, ExecutionID string } `json:"error"`
		} `json:"payload"`
	}
	(<-answer).Expect(t, http.StatusOK).Decode(t, &env)
	if e := env.Payload.Error; e.Code != "EXECUTION_FAILED" || e.Reason != mesh.ReasonCanceled || e.ExecutionID != id {
		t.Fatalf("the envelope's answer: %+v", e)
	}

	// 2. Created through the partner routes; completes.
	var task struct {
		TaskID string `json:"taskId"`
	}
	v.keyed(meshtest.Request{Method: http.MethodPost, Path: "/a2a/task", JSON: map[string]any{
		"method": "message/send", "params": map[string]any{"text": "wait, then finish"}, "clientAgentId": "walker", "remoteAgentId": agent.Agent.ID}}).Decode(t, &task)
	p.WaitTask(task.TaskID, 30*time.Second, meshtest.StatusIs(mesh.StatusRunning))
	v.agree(task.TaskID, mesh.StatusRunning)
	host.Gate <- struct{}{}
	p.WaitTask(task.TaskID, 30*time.Second, meshtest.StatusIs(mesh.StatusCompleted))
	v.agree(task.TaskID, mesh.StatusCompleted)

	// 3. Created through the A2A endpoint; canceled through the partner routes.
	var sent struct {
		Result struct {
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
		} `json:"result"`
	}
	v.keyed(meshtest.Request{Method: http.MethodPost, Path: "/a2a/" + agent.Agent.ID, Header: keyHeader(), JSON: map[string]any{
		"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": map[string]any{"configuration": map[string]any{"returnImmediately": true},
			"message": map[string]any{"messageId": mesh.NewID(), "role": "ROLE_USER", "parts": []any{map[string]any{"text": "wait for the partner"}}}}}}).Decode(t, &sent)
	a2aID := sent.Result.Task.ID
	p.WaitTask(a2aID, 30*time.Second, meshtest.StatusIs(mesh.StatusRunning))
	v.agree(a2aID, mesh.StatusRunning)
	var canceled struct {
		Result json.RawMessage `json:"result"`
	}
	v.keyed(meshtest.Request{Method: http.MethodPost, Path: "/a2a/message", JSON: map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tasks/cancel", "params": map[string]any{"taskId": a2aID}}}).Decode(t, &canceled)
	if !strings.Contains(string(canceled.Result), `"state":"canceled"`) {
		t.Fatalf("partner cancel: %s", canceled.Result)
	}
	v.agree(a2aID, mesh.StatusCanceled)
}
