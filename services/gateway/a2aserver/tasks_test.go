package a2aserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestParts_EveryKindBothWays: text parts become the input text, data parts
// the structured input, inline files are stored and reach the adapter as
// attachments (with their bytes, fetched by the runtime), URI files as
// URIs; the answer comes back as a text part, a data part and a file part
// whose link downloads the file with the caller's credential only.
func TestParts_EveryKindBothWays(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{agent: meshtest.AgentOptions{Provider: newScripted()}})
	c := d.client("1.0", a2a.TransportProtocolJSONRPC)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	file := a2a.NewRawPart([]byte("col1,col2\n1,2\n"))
	file.Filename, file.MediaType = "../../etc/table.csv", "text/csv"
	uri := a2a.NewFileURLPart("https://files.example.com/docs/spec.pdf", "application/pdf")
	msg := a2a.NewMessage(a2a.MessageRoleUser,
		a2a.NewTextPart("parts please"), a2a.NewTextPart("second line"),
		a2a.NewDataPart(map[string]any{"city": "Lyon", "n": 2}), file, uri)
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("state %s: %+v", task.Status.State, task.Status.Message)
	}
	text := resultText(task)
	for _, want := range []string{`table.csv(text/csv,14)="col1,col2\n1,2\n"`, `spec.pdf(application/pdf,?)="" uri=https://files.example.com/docs/spec.pdf`} {
		if !strings.Contains(text, want) {
			t.Errorf("the adapter did not receive %s; it answered %q", want, text)
		}
	}
	var data, fileLink *a2a.Part
	for _, art := range task.Artifacts {
		for _, p := range art.Parts {
			switch p.Content.(type) {
			case a2a.Data:
				data = p
			case a2a.URL:
				fileLink = p
			}
		}
	}
	if data == nil || meshtest.JSON(data.Data()) != `{"echo":{"city":"Lyon","n":2}}` {
		t.Errorf("structured output: %+v", data)
	}
	if fileLink == nil || fileLink.Filename != "report.txt" || fileLink.MediaType != "text/plain" {
		t.Fatalf("file part: %+v", fileLink)
	}
	link := string(fileLink.URL())
	if !strings.HasPrefix(link, d.url+"/artifacts/") {
		t.Fatalf("file link %s is not the agent's download route", link)
	}
	get := func(key string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
		if key != "" {
			req.Header.Set("X-API-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := get(d.key); status != 200 || body != "a report for parts please\nsecond line" {
		t.Errorf("download with the key: %d %q", status, body)
	}
	if status, _ := get(""); status != 401 {
		t.Errorf("download without a credential: %d", status)
	}
	if status, _ := get(d.newKey(nil)); status != 404 {
		t.Errorf("download with another caller's key: %d", status)
	}
	// The history keeps the message, its inline file as a link to the
	// stored copy (never its bytes twice).
	got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	h := got.History[0]
	if len(h.Parts) != 5 || h.Parts[3].URL() == "" || h.Parts[3].Filename != "table.csv" {
		t.Errorf("history message: %s", meshtest.JSON(h))
	}
	if status, body := get2(t, string(h.Parts[3].URL()), d.key); status != 200 || body != "col1,col2\n1,2\n" {
		t.Errorf("the stored input file: %d %q", status, body)
	}

	// A file of many chunks is stored and read back intact, by the
	// runtime that hands it to the adapter and by the caller.
	large := make([]byte, 1<<20+5)
	for i := range large {
		large[i] = byte(i*31 + i/257)
	}
	lctx, lcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer lcancel()
	res, err = c.SendMessage(lctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("keep this"), a2a.NewRawPart(large))})
	if err != nil {
		t.Fatal(err)
	}
	if task := res.(*a2a.Task); task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("a message with a large file: %s %+v", task.Status.State, task.Status.Message)
	} else if got, err := c.GetTask(lctx, &a2a.GetTaskRequest{ID: task.ID}); err != nil || len(got.History) == 0 || len(got.History[0].Parts) != 2 {
		t.Fatalf("the large file's task: %v %v", got, err)
	} else if status, body := get2(t, string(got.History[0].Parts[1].URL()), d.key); status != 200 || body != string(large) {
		t.Errorf("the stored large file: %d, %d bytes, want the %d given", status, len(body), len(large))
	}

	// An inline file over 5 MiB is refused.
	big := a2a.NewRawPart(make([]byte, 5<<20+1))
	_, err = c.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("too big"), big)})
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a 5 MiB + 1 file: %v", err)
	}
}

func get2(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestInputRequired_ContinuesTheSameTask: an agent that ends its turn with
// a question leaves the task input-required with the question as its status
// message; the caller's next message with that taskId continues the same
// task run in the same conversation, and the agent sees the earlier turns.
func TestInputRequired_ContinuesTheSameTask(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{agent: meshtest.AgentOptions{Provider: newScripted()}})
	for _, version := range []string{"1.0", "0.3"} {
		c := d.client(version, a2a.TransportProtocolJSONRPC)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("ask for a table")})
		if err != nil {
			t.Fatal(err)
		}
		task := res.(*a2a.Task)
		if task.Status.State != a2a.TaskStateInputRequired || task.Status.Message == nil || task.Status.Message.Parts[0].Text() != "Which city?" {
			t.Fatalf("%s: first turn: %s %s", version, task.Status.State, meshtest.JSON(task.Status.Message))
		}
		run := d.p.GetTask(string(task.ID))
		if run.Status != mesh.StatusInputRequired {
			t.Fatalf("%s: the run is %s", version, run.Status)
		}
		answer := textMessage("Lyon")
		answer.TaskID, answer.ContextID = task.ID, task.ContextID
		res, err = c.SendMessage(ctx, &a2a.SendMessageRequest{Message: answer})
		if err != nil {
			t.Fatalf("%s: answer: %v", version, err)
		}
		done := res.(*a2a.Task)
		if done.ID != task.ID || done.ContextID != task.ContextID || done.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("%s: second turn: %s %s %s", version, done.ID, done.ContextID, done.Status.State)
		}
		if got := resultText(done); got != "booked Lyon after user:ask for a table | agent:Which city?" {
			t.Errorf("%s: the agent answered %q", version, got)
		}
		var roles []string
		for _, m := range done.History {
			roles = append(roles, string(m.Role)+":"+m.Parts[0].Text())
		}
		if strings.Join(roles, " | ") != "ROLE_USER:ask for a table | ROLE_AGENT:Which city? | ROLE_USER:Lyon" {
			t.Errorf("%s: history %v", version, roles)
		}
		if run := d.p.GetTask(string(task.ID)); run.ConversationID != task.ContextID || run.Status != mesh.StatusCompleted || run.Attempt != 2 {
			t.Errorf("%s: run after the second turn: %s attempt %d", version, run.Status, run.Attempt)
		}
		// A finished task takes no further message.
		again := textMessage("Paris")
		again.TaskID = task.ID
		if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: again}); err == nil {
			t.Errorf("%s: a message to a completed task was accepted", version)
		}
		cancel()
	}
}

// TestStreaming_SubscribersSeeTheSameOrderedEvents: several subscribers of
// one task (one of them connecting late) each get the task first, then the
// same events in the same order, live from the bus: working with the
// progress text as the status message, then the result and the final state.
func TestStreaming_SubscribersSeeTheSameOrderedEvents(t *testing.T) {
	t.Parallel()
	host := newScripted()
	d := startEndpoint(t, endpointOptions{agent: meshtest.AgentOptions{Provider: host}})
	c := d.client("1.0", a2a.TransportProtocolJSONRPC)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("wait streaming"), Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.(*a2a.Task).ID
	meshtest.Eventually(t, 20*time.Second, func() bool {
		g, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
		return err == nil && g.Status.Message != nil && strings.Contains(g.Status.Message.Parts[0].Text(), "thinking about")
	}, func() string { return "the host's progress never showed" })

	type seen struct {
		first string
		rest  []string
	}
	var mu sync.Mutex
	results := map[int]*seen{}
	var wg sync.WaitGroup
	started := make(chan struct{}, 3)
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &seen{}
			for ev, err := range d.client("1.0", a2a.TransportProtocolJSONRPC).SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id}) {
				if err != nil {
					t.Errorf("subscriber %d: %v", i, err)
					return
				}
				switch v := ev.(type) {
				case *a2a.Task:
					s.first = string(v.Status.State) + " " + v.Status.Message.Parts[0].Text()
					started <- struct{}{}
				case *a2a.TaskStatusUpdateEvent:
					s.rest = append(s.rest, string(v.Status.State))
				case *a2a.TaskArtifactUpdateEvent:
					s.rest = append(s.rest, "artifact "+string(v.Artifact.ID)+" "+v.Artifact.Parts[0].Text())
				}
			}
			mu.Lock()
			results[i] = s
			mu.Unlock()
		}()
	}
	for i := 0; i < 3; i++ {
		<-started
	}
	host.gate <- struct{}{}
	wg.Wait()
	want := []string{"artifact result done: wait streaming", "TASK_STATE_COMPLETED"}
	for i, s := range results {
		if s.first != "TASK_STATE_WORKING thinking about wait streaming" {
			t.Errorf("subscriber %d: first %q", i, s.first)
		}
		if strings.Join(s.rest, ", ") != strings.Join(want, ", ") {
			t.Errorf("subscriber %d saw %v, want %v", i, s.rest, want)
		}
	}

	// A stream from the start: submitted or working first, progress with
	// its text, then the end.
	var states, messages []string
	for ev, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("wait again")}) {
		if err != nil {
			t.Fatal(err)
		}
		var status a2a.TaskStatus
		switch v := ev.(type) {
		case *a2a.Task:
			status = v.Status
		case *a2a.TaskStatusUpdateEvent:
			status = v.Status
		default:
			continue
		}
		states = append(states, string(status.State))
		if status.Message != nil {
			messages = append(messages, status.Message.Parts[0].Text())
			if strings.Contains(status.Message.Parts[0].Text(), "thinking about") {
				host.gate <- struct{}{}
			}
		}
	}
	if len(states) < 2 || states[len(states)-1] != "TASK_STATE_COMPLETED" || !contains(messages, "thinking about wait again") {
		t.Errorf("stream: states %v, messages %v", states, messages)
	}
	// Subscribing to a task that ended is refused.
	for _, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id}) {
		if err == nil {
			t.Error("a subscription to a completed task was accepted")
		}
		break
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestBlockingSend_OfflineAgentAnswersTheSubmittedTask: a blocking send to an
// agent whose runtime is offline answers the submitted task after the
// bounded wait, and the task runs once the runtime is back.
func TestBlockingSend_OfflineAgentAnswersTheSubmittedTask(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{platform: func(c *platform.Config) { c.A2AOfflineWait = 500 * time.Millisecond }})
	d.agent.Stop()
	meshtest.Eventually(t, 10*time.Second, func() bool {
		var l struct {
			Runtimes []mesh.RuntimeView `json:"runtimes"`
		}
		d.p.Do(http.MethodGet, "/agent-accounts/"+d.agent.Agent.ID+"/runtimes", nil, &l)
		return l.Runtimes[0].Status == mesh.PresenceOffline
	}, func() string { return "the runtime never went offline" })
	c := d.client("1.0", a2a.TransportProtocolJSONRPC)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("anyone there?")})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	if task.Status.State != a2a.TaskStateSubmitted || time.Since(start) > 5*time.Second {
		t.Fatalf("a send to an offline agent answered %s after %s", task.Status.State, time.Since(start))
	}
	if run := d.p.GetTask(string(task.ID)); run.Status != mesh.StatusPending {
		t.Errorf("the run is %s", run.Status)
	}
}

// TestTasks_OutliveTheGateway: a task created through the A2A endpoint is read
// and followed after the platform restarted, from the run record and the
// event stream; listing shows each caller its own tasks and the owner all.
func TestTasks_OutliveTheGateway(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.DataDir = dir })
	var agent mesh.Agent
	p.Do(http.MethodPost, "/agent-accounts", map[string]any{"name": "restarting"}, &agent)
	keyA := keyOf(t, p, agent.ID)
	keyB := keyOf(t, p, agent.ID)
	send := func(key, text string) string {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": map[string]any{
			"message":       map[string]any{"messageId": mesh.NewID(), "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}},
			"configuration": map[string]any{"returnImmediately": true}}})
		resp := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a/" + agent.ID, Body: b, ContentType: "application/json",
			Header: http.Header{"X-Api-Key": {key}, "A2a-Version": {"1.0"}}})
		var out struct {
			Result struct {
				Task struct {
					ID string `json:"id"`
				} `json:"task"`
			} `json:"result"`
		}
		resp.Decode(t, &out)
		if out.Result.Task.ID == "" {
			t.Fatalf("send: %s", resp.Body)
		}
		return out.Result.Task.ID
	}
	a1 := send(keyA, "first of A")
	send(keyA, "second of A")
	b1 := send(keyB, "first of B")
	p.Stop()

	p2 := meshtest.StartPlatform(t, func(c *platform.Config) { c.DataDir = dir })
	online := &endpoint{t: t, p: p2, url: p2.APIBase + "/a2a/" + agent.ID, key: keyA}
	online.agent = &meshtest.OnlineAgent{Agent: agent}
	list := func(key string) []string {
		a := online.do(raw{method: http.MethodGet, path: "/a2a/" + agent.ID + "/tasks", header: map[string]string{"A2A-Version": "1.0", "X-API-Key": key}})
		var l a2a.ListTasksResponse
		if err := json.Unmarshal(a.body, &l); err != nil {
			t.Fatalf("list: %d %s", a.status, a.body)
		}
		var ids []string
		for _, task := range l.Tasks {
			ids = append(ids, string(task.ID))
		}
		return ids
	}
	if got := list(keyA); len(got) != 2 || got[1] != a1 {
		t.Errorf("A lists %v", got)
	}
	if got := list(keyB); len(got) != 1 || got[0] != b1 {
		t.Errorf("B lists %v", got)
	}
	owner := online.do(raw{method: http.MethodGet, path: "/a2a/" + agent.ID + "/tasks?pageSize=2", header: map[string]string{"A2A-Version": "1.0", "Authorization": "Bearer " + p2.OwnerToken}})
	var ol a2a.ListTasksResponse
	_ = json.Unmarshal(owner.body, &ol)
	if len(ol.Tasks) != 2 || ol.TotalSize != 3 || ol.NextPageToken == "" {
		t.Errorf("the owner's first page: %s", owner.body)
	}
	// B does not see A's task.
	if a := online.do(raw{method: http.MethodGet, path: "/a2a/" + agent.ID + "/tasks/" + a1, header: map[string]string{"A2A-Version": "1.0", "X-API-Key": keyB}}); a.status != 404 {
		t.Errorf("B reads A's task: %d", a.status)
	}
	// A follows its task, which runs once a runtime comes online.
	events := make(chan string, 64)
	go online.sse(http.MethodGet, "/a2a/"+agent.ID+"/tasks/"+a1+":subscribe", "1.0", events)
	if first := <-events; !strings.Contains(first, "TASK_STATE_SUBMITTED") {
		t.Fatalf("first event after the restart: %s", first)
	}
	meshtest.ConnectAgent(t, p2, agent, meshtest.AgentOptions{})
	var last string
	for ev := range events {
		last = ev
	}
	if !strings.Contains(last, "TASK_STATE_COMPLETED") {
		t.Errorf("last event: %s", last)
	}
}

func keyOf(t *testing.T, p *meshtest.Platform, agentID string) string {
	t.Helper()
	var res struct {
		APIKey string `json:"api_key"`
	}
	p.Do(http.MethodPost, "/a2a/"+agentID+"/api-keys", nil, &res)
	return res.APIKey
}

// TestSubscribe_InputRequiredTaskStreamsUntilTerminal: a subscription to a
// task that waits for input (interrupted, not terminal) stays open: it
// carries the task, then, once the caller answers, the task's later events,
// and ends with the terminal state (1.0 SubscribeToTask, 0.3
// tasks/resubscribe, over JSON-RPC and HTTP+JSON).
func TestSubscribe_InputRequiredTaskStreamsUntilTerminal(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{agent: meshtest.AgentOptions{Provider: newScripted()}})
	for _, version := range []string{"1.0", "0.3"} {
		for _, binding := range []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON} {
			name := version + " " + string(binding)
			c := d.client(version, binding)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("ask for a room")})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			task := res.(*a2a.Task)
			if task.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("%s: the task is %s", name, task.Status.State)
			}
			first := make(chan struct{})
			var states []string
			done := make(chan struct{})
			go func() {
				defer close(done)
				for ev, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
					if err != nil {
						states = append(states, "error: "+err.Error())
						break
					}
					switch v := ev.(type) {
					case *a2a.Task:
						states = append(states, "task "+string(v.Status.State))
						close(first)
					case *a2a.TaskStatusUpdateEvent:
						states = append(states, string(v.Status.State))
					}
				}
			}()
			select {
			case <-first:
			case <-done:
				t.Fatalf("%s: the subscription ended before its first event: %v", name, states)
			}
			answer := textMessage("Nice")
			answer.TaskID, answer.ContextID = task.ID, task.ContextID
			if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: answer}); err != nil {
				t.Fatalf("%s: answer: %v", name, err)
			}
			select {
			case <-done:
			case <-ctx.Done():
				t.Fatalf("%s: the subscription did not end with the task", name)
			}
			if len(states) < 2 || states[0] != "task TASK_STATE_INPUT_REQUIRED" || states[len(states)-1] != "TASK_STATE_COMPLETED" {
				t.Errorf("%s: the subscription carried %v, want the input-required task, the later updates and the completion", name, states)
			}
			cancel()
		}
	}
}
