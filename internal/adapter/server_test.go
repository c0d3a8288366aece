package adapter

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
	"github.com/a2amesh/a2amesh/internal/testkit/syncbuf"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/rs/zerolog"
)

func getHealth(t *testing.T, url string) adapterapi.Health {
	t.Helper()
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /health: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var raw map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["busy"]; !ok {
		t.Fatalf("health %v lacks busy", raw)
	}
	return adapterapi.Health{OK: raw["ok"] == true, Provider: raw["provider"].(string), Busy: raw["busy"] == true}
}

func TestHealth_ReportsProviderAndWhetherATaskRuns(t *testing.T) {
	p := newBlockingProvider()
	_, ts := startServer(t, Config{Provider: p})

	if h := getHealth(t, ts.URL); h != (adapterapi.Health{OK: true, Provider: "blocking"}) {
		t.Fatalf("idle health = %+v", h)
	}
	done := postAsync(t.Context(), ts.URL, taskBody("r1"))
	receive(t, p.started, "task start")
	if h := getHealth(t, ts.URL); !h.Busy || !h.OK {
		t.Fatalf("health while a task runs = %+v, want busy", h)
	}
	p.release <- struct{}{}
	receive(t, done, "reply")
	if h := getHealth(t, ts.URL); h.Busy {
		t.Fatalf("health after the task = %+v, want not busy", h)
	}
}

func TestRunTask_SeedRequestGetsTheSuccessEnvelope(t *testing.T) {
	_, ts := startServer(t, Config{Provider: provider.Echo{}})

	r := post(t.Context(), ts.URL, seedRequest)
	if r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("Content-Type = %q", r.header.Get("Content-Type"))
	}
	reply := parseReply(t, r)
	if reply.Kind != adapterapi.KindSuccess || reply.Output["text"] != "user request" {
		t.Fatalf("reply = %+v, want success with output.text", reply)
	}
}

func TestRunTask_AcceptsOlderAndNewerRequestShapes(t *testing.T) {
	_, ts := startServer(t, Config{Provider: provider.Echo{}})
	bodies := map[string]string{
		"legacy, without platform or ids": `{"task_run_id":"r","input":{"text":"old"}}`,
		"newer, with unknown fields":      `{"task_run_id":"r","input":{"text":"new","parts":[]},"instructions":"x","priority":3,"platform":{"name":"A2A","origin":"ysee.tech","region":"eu"}}`,
		"input without text":              `{"task_run_id":"r","input":{}}`,
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			reply := parseReply(t, post(t.Context(), ts.URL, body, "Content-Type", "application/json; charset=utf-8"))
			if reply.Kind != adapterapi.KindSuccess {
				t.Fatalf("reply = %+v", reply)
			}
		})
	}
}

func TestRunTask_ProviderErrorIsAFailureReplyWith200(t *testing.T) {
	_, ts := startServer(t, Config{Provider: funcProvider(func(context.Context, *provider.Task) (*provider.Result, error) {
		return nil, errors.New("host exited with status 2: no credits")
	})})

	reply := parseReply(t, post(t.Context(), ts.URL, taskBody("r")))
	if reply.Kind != adapterapi.KindFailure || reply.Error != "host exited with status 2: no credits" {
		t.Fatalf("reply = %+v", reply)
	}
}

// TestRunTask_ProviderPanicIsAFailureAndFreesTheQueue: a panicking provider
// fails its task and the next one runs; the log says so without the panic's
// value, which may hold the task's secrets.
func TestRunTask_ProviderPanicIsAFailureAndFreesTheQueue(t *testing.T) {
	const secretValue = "sk-live-panic-0123456789"
	var logs syncbuf.Buffer
	_, ts := startServer(t, Config{Logger: zerolog.New(&logs), Provider: funcProvider(func(_ context.Context, t *provider.Task) (*provider.Result, error) {
		if t.Text == "hello boom" {
			panic("boom: " + secretValue)
		}
		return &provider.Result{Output: map[string]any{"text": "fine"}}, nil
	})})

	if reply := parseReply(t, post(t.Context(), ts.URL, taskBody("boom"))); reply.Kind != adapterapi.KindFailure {
		t.Fatalf("reply = %+v, want failure", reply)
	}
	if reply := parseReply(t, post(t.Context(), ts.URL, taskBody("next"))); reply.Kind != adapterapi.KindSuccess {
		t.Fatalf("next reply = %+v, want success", reply)
	}
	if got := logs.String(); !strings.Contains(got, "provider panicked") || strings.Contains(got, secretValue) {
		t.Fatalf("the log should tell of the panic without its value:\n%s", got)
	}
}

func TestRunTask_RefusesWhatCannotBeATask(t *testing.T) {
	_, ts := startServer(t, Config{Provider: provider.Echo{}})
	tests := []struct {
		name   string
		method string
		ctype  string
		body   string
		status int
		errHas string
	}{
		{"not JSON", "POST", "application/json", `{"task_run_id":`, 400, "invalid request"},
		{"array", "POST", "application/json", `[1,2]`, 400, "JSON object"},
		{"empty", "POST", "application/json", ``, 400, "empty"},
		{"no task_run_id", "POST", "application/json", `{"input":{"text":"x"}}`, 400, "task_run_id"},
		{"blank task_run_id", "POST", "application/json", `{"task_run_id":"  ","input":{}}`, 400, "task_run_id"},
		{"no input", "POST", "application/json", `{"task_run_id":"r"}`, 400, "input is required"},
		{"input string", "POST", "application/json", `{"task_run_id":"r","input":"text"}`, 400, "input must be a JSON object"},
		{"input null", "POST", "application/json", `{"task_run_id":"r","input":null}`, 400, "input must be a JSON object"},
		{"wrong type", "POST", "application/json", `{"task_run_id":7,"input":{}}`, 400, "task_run_id"},
		{"runtime token", "POST", "application/json", `{"task_run_id":"r","input":{},"runtime_token":"secret"}`, 400, "runtime_token"},
		{"trailing data", "POST", "application/json", `{"task_run_id":"r","input":{}} {}`, 400, "invalid request"},
		{"GET", "GET", "", ``, 405, "POST"},
		{"PUT", "PUT", "application/json", taskBody("r"), 405, "POST"},
		{"text/plain", "POST", "text/plain", taskBody("r"), 415, "application/json"},
		{"no content type", "POST", "", taskBody("r"), 415, "application/json"},
		{"too large", "POST", "application/json", `{"task_run_id":"r","input":{"text":"` + strings.Repeat("x", MaxRequestBytes) + `"}}`, 413, "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tt.method, ts.URL+"/run-task", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var f adapterapi.FailureResponse
			if err := json.NewDecoder(resp.Body).Decode(&f); err != nil {
				t.Fatalf("body is not JSON: %v", err)
			}
			if resp.StatusCode != tt.status || f.Success || !strings.Contains(f.Error, tt.errHas) {
				t.Fatalf("got %d %+v, want %d with an error mentioning %q", resp.StatusCode, f, tt.status, tt.errHas)
			}
			if tt.status == 405 && resp.Header.Get("Allow") != "POST" {
				t.Fatalf("Allow = %q", resp.Header.Get("Allow"))
			}
		})
	}
}

func TestRunTask_ExecuteIsAnAlias(t *testing.T) {
	_, ts := startServer(t, Config{Provider: provider.Echo{}})
	resp, err := http.Post(ts.URL+"/execute", "application/json", strings.NewReader(taskBody("r")))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s adapterapi.SuccessResponse
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || !s.Success || s.Output["text"] != "hello r" {
		t.Fatalf("POST /execute: %+v %v", s, err)
	}
}

func TestRunTask_OneAtATimeWithABoundedFIFOQueue(t *testing.T) {
	p := newBlockingProvider()
	s, ts := startServer(t, Config{Provider: p, QueueSize: 2})
	ctx := t.Context()

	first := postAsync(ctx, ts.URL, taskBody("r1"))
	if id := receive(t, p.started, "first task"); id != "r1" {
		t.Fatalf("started %q first", id)
	}
	second := postAsync(ctx, ts.URL, taskBody("r2"))
	eventually(t, "r2 to queue", func() bool { return s.queued() == 1 })
	third := postAsync(ctx, ts.URL, taskBody("r3"))
	eventually(t, "r3 to queue", func() bool { return s.queued() == 2 })

	status, msg := failureOf(t, post(ctx, ts.URL, taskBody("r4")))
	if status != http.StatusTooManyRequests || !strings.Contains(msg, "queue") {
		t.Fatalf("request over the queue: %d %q, want 429", status, msg)
	}

	for i, want := range []string{"r1", "r2", "r3"} {
		if i > 0 {
			if id := receive(t, p.started, want); id != want {
				t.Fatalf("task %d to start is %q, want %q", i+1, id, want)
			}
		}
		select {
		case id := <-p.started:
			t.Fatalf("%q started while %q runs", id, want)
		default:
		}
		p.release <- struct{}{}
		reply := parseReply(t, receive(t, []<-chan response{first, second, third}[i], want+" reply"))
		if reply.Output["text"] != "done "+want {
			t.Fatalf("reply to %s = %+v", want, reply)
		}
	}
}

func TestRunTask_QueueFullAnswersRetryAfter(t *testing.T) {
	p := newBlockingProvider()
	_, ts := startServer(t, Config{Provider: p, QueueSize: -1})
	running := postAsync(t.Context(), ts.URL, taskBody("r1"))
	receive(t, p.started, "task start")

	r := post(t.Context(), ts.URL, taskBody("r2"))
	if status, _ := failureOf(t, r); status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
		t.Fatalf("got %d Retry-After %q, want 429 with Retry-After", status, r.header.Get("Retry-After"))
	}
	p.release <- struct{}{}
	parseReply(t, receive(t, running, "reply"))
}

func TestRunTask_QueuedRequestLeavesWhenItsClientGoesAway(t *testing.T) {
	p := newBlockingProvider()
	s, ts := startServer(t, Config{Provider: p, QueueSize: 1})
	running := postAsync(t.Context(), ts.URL, taskBody("r1"))
	receive(t, p.started, "task start")

	ctx, cancel := context.WithCancel(t.Context())
	gone := postAsync(ctx, ts.URL, taskBody("gone"))
	eventually(t, "the request to queue", func() bool { return s.queued() == 1 })
	cancel()
	receive(t, gone, "canceled request")
	eventually(t, "the queue to empty", func() bool { return s.queued() == 0 })

	next := postAsync(t.Context(), ts.URL, taskBody("r2"))
	eventually(t, "r2 to queue", func() bool { return s.queued() == 1 })
	p.release <- struct{}{}
	parseReply(t, receive(t, running, "r1 reply"))
	if id := receive(t, p.started, "r2 start"); id != "r2" {
		t.Fatalf("started %q after r1, want r2 (the canceled request must not run)", id)
	}
	p.release <- struct{}{}
	parseReply(t, receive(t, next, "r2 reply"))
}

func TestRunTask_StreamsProgressBeforeTheResult(t *testing.T) {
	half := 50.0
	p := newBlockingProvider()
	p.report = &provider.Progress{Message: "halfway", Percent: &half}
	_, ts := startServer(t, Config{Provider: p})

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/run-task", strings.NewReader(taskBody("r1")))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/x-ndjson, application/json;q=0.5")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != adapterapi.MediaNDJSON {
		t.Fatalf("stream response: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := bufio.NewScanner(resp.Body)
	readLine := func() adapterapi.StreamLine {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("stream ended early: %v", lines.Err())
		}
		var l adapterapi.StreamLine
		if err := json.Unmarshal(lines.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", lines.Bytes(), err)
		}
		return l
	}

	// The provider is still blocked: this line can only come from a
	// stream flushed while the task runs.
	progress := readLine()
	if progress.Type != adapterapi.LineProgress || progress.Message != "halfway" || progress.Percent == nil || *progress.Percent != 50 {
		t.Fatalf("first line = %+v, want the progress report", progress)
	}
	p.release <- struct{}{}
	result := readLine()
	if result.Type != adapterapi.LineResult {
		t.Fatalf("second line = %+v, want the result", result)
	}
	reply, err := adapterapi.ParseReply(result.Result)
	if err != nil || reply.Kind != adapterapi.KindSuccess || reply.Output["text"] != "done r1" {
		t.Fatalf("result = %s (%v)", result.Result, err)
	}
	if lines.Scan() {
		t.Fatalf("line after the result: %q", lines.Bytes())
	}
}

func TestRunTask_StreamedFailureIsTheResultLine(t *testing.T) {
	_, ts := startServer(t, Config{Provider: funcProvider(func(context.Context, *provider.Task) (*provider.Result, error) {
		return nil, errors.New("no luck")
	})})
	r := post(t.Context(), ts.URL, taskBody("r"), "Accept", "application/x-ndjson")
	var l adapterapi.StreamLine
	if err := json.Unmarshal(r.body, &l); err != nil || l.Type != adapterapi.LineResult {
		t.Fatalf("stream %q: %v", r.body, err)
	}
	if reply, err := adapterapi.ParseReply(l.Result); err != nil || reply.Kind != adapterapi.KindFailure || reply.Error != "no luck" {
		t.Fatalf("result %s", l.Result)
	}
}

// TestRunTask_AHostStoppedAtItsBudgetFailsWithTheCodeAndWhatItSpent: a
// host that stopped itself at the run's budget is a failure with the code
// BUDGET_EXCEEDED and the usage the host reported, which the runtime
// reads back.
func TestRunTask_AHostStoppedAtItsBudgetFailsWithTheCodeAndWhatItSpent(t *testing.T) {
	cost := 4.02
	_, ts := startServer(t, Config{Provider: funcProvider(func(context.Context, *provider.Task) (*provider.Result, error) {
		return nil, &provider.BudgetError{Err: errors.New("claude: stopped at the budget limit"), Usage: &mesh.Usage{InputTokens: 1000, OutputTokens: 10, CostUSD: &cost}}
	})})
	reply := parseReply(t, post(t.Context(), ts.URL, taskBody("r1")))
	var u mesh.Usage
	if reply.Kind != adapterapi.KindFailure || reply.Code != mesh.ReasonBudgetExceeded || json.Unmarshal(reply.Usage, &u) != nil ||
		u.InputTokens != 1000 || u.Cost() != cost || !strings.Contains(reply.Error, "budget") {
		t.Fatalf("reply %+v (usage %s)", reply, reply.Usage)
	}
}

func TestRunTask_ClientGoingAwayCancelsTheTask(t *testing.T) {
	p := newBlockingProvider()
	s, ts := startServer(t, Config{Provider: p})
	ctx, cancel := context.WithCancel(t.Context())
	done := postAsync(ctx, ts.URL, taskBody("r1"))
	receive(t, p.started, "task start")

	cancel()
	if cause := receive(t, p.stopped, "the provider's context to end"); !errors.Is(cause, context.Canceled) {
		t.Fatalf("cause = %v, want context.Canceled", cause)
	}
	receive(t, done, "client to return")
	eventually(t, "the adapter to be idle", func() bool { return !s.queue.busy() })
}

func TestRunTask_TimeoutFailsTheTask(t *testing.T) {
	p := newBlockingProvider()
	_, ts := startServer(t, Config{Provider: p, TaskTimeout: 50 * time.Millisecond})

	reply := parseReply(t, post(t.Context(), ts.URL, taskBody("r1")))
	if reply.Kind != adapterapi.KindFailure || reply.Error != "timed out after 50ms" {
		t.Fatalf("reply = %+v, want the timeout failure", reply)
	}
	var timeout *timeoutError
	if cause := receive(t, p.stopped, "provider stop"); !errors.As(cause, &timeout) {
		t.Fatalf("cause = %v", cause)
	}
}

func TestRunTask_UnknownPathIs404(t *testing.T) {
	_, ts := startServer(t, Config{Provider: provider.Echo{}})
	resp, err := http.Get(ts.URL + "/nope")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func TestRunTask_TaskLongerThanTheReadTimeoutIsNotCanceled(t *testing.T) {
	s, err := New(Config{Provider: funcProvider(func(ctx context.Context, _ *provider.Task) (*provider.Result, error) {
		// Outlast the read timeout several times over.
		select {
		case <-time.After(250 * time.Millisecond):
			return &provider.Result{Output: map[string]any{"text": "still here"}}, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}), Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s.http.ReadTimeout = 20 * time.Millisecond
	url, _ := serve(t, s)

	reply := parseReply(t, post(t.Context(), url, taskBody("r1")))
	if reply.Kind != adapterapi.KindSuccess {
		t.Fatalf("reply = %+v, want success", reply)
	}
}
