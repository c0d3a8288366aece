package partner_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/a2atoken"
	"github.com/a2amesh/a2amesh/internal/partnerapi"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// endpoint is a platform with an online agent (real runtime, scripted host)
// and an API key of it.
type endpoint struct {
	t     *testing.T
	p     *meshtest.Platform
	agent *meshtest.OnlineAgent
	host  *meshtest.Scripted
	key   string
}

func startEndpoint(t *testing.T, o func(*platform.Config)) *endpoint {
	t.Helper()
	p := meshtest.StartPlatform(t, o)
	host := meshtest.NewScripted("")
	a := meshtest.StartOnlineAgent(t, p, meshtest.AgentOptions{Name: "storyteller", Provider: host})
	d := &endpoint{t: t, p: p, agent: a, host: host}
	d.key = d.newKey(a.Agent.ID, nil)
	return d
}

func (d *endpoint) newKey(agentID string, scopes []string) string {
	d.t.Helper()
	var k meshapi.CreateA2AKeyResponse
	d.p.Do(http.MethodPost, "/a2a/"+agentID+"/api-keys", map[string]any{"name": "partner", "scopes": scopes}, &k)
	return k.APIKey
}

// call sends a request with a credential header ("X-API-Key" or
// "Authorization") and returns the answer.
func (d *endpoint) call(method, path, header, value string, body any) *meshtest.Response {
	d.t.Helper()
	h := http.Header{"Accept": {"application/json"}}
	if header != "" {
		h.Set(header, value)
	}
	return d.p.Send(d.t, meshtest.Request{Method: method, Path: path, Header: h, JSON: body})
}

func (d *endpoint) keyed(method, path string, body any) *meshtest.Response {
	return d.call(method, path, "X-API-Key", d.key, body)
}

// rpcAnswer is a JSON-RPC answer of /a2a/message.
type rpcAnswer struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      any               `json:"id"`
	Result  json.RawMessage   `json:"result"`
	Error   *partnerapi.Error `json:"error"`
}

func decodeRPC(t *testing.T, r *meshtest.Response) rpcAnswer {
	t.Helper()
	var a rpcAnswer
	r.Decode(t, &a)
	if a.JSONRPC != "2.0" {
		t.Fatalf("not a JSON-RPC 2.0 answer: %s", r.Body)
	}
	return a
}

func decodeTask(t *testing.T, raw []byte) partnerapi.Task {
	t.Helper()
	var task partnerapi.Task
	if err := json.Unmarshal(raw, &task); err != nil {
		t.Fatalf("not a Task: %v: %s", err, raw)
	}
	return task
}

// checkTask checks a Task field by field against seed 003's shape.
func checkTask(t *testing.T, task partnerapi.Task, want partnerapi.Task) {
	t.Helper()
	if !mesh.ValidID(task.TaskID) {
		t.Errorf("taskId %q is not a UUID", task.TaskID)
	}
	for name, pair := range map[string][2]string{
		"state": {string(task.State), string(want.State)}, "method": {task.Method, want.Method}, "sessionId": {task.SessionID, want.SessionID},
		"clientAgentId": {task.ClientAgentID, want.ClientAgentID}, "remoteAgentId": {task.RemoteAgentID, want.RemoteAgentID},
	} {
		if pair[1] != "" && pair[0] != pair[1] {
			t.Errorf("Task.%s = %q, want %q", name, pair[0], pair[1])
		}
	}
	for name, ts := range map[string]string{"createdAt": task.CreatedAt, "updatedAt": task.UpdatedAt} {
		if _, err := time.Parse(time.RFC3339, ts); err != nil {
			t.Errorf("Task.%s %q is not ISO-8601: %v", name, ts, err)
		}
	}
	if task.Progress == nil || *task.Progress < 0 || *task.Progress > 100 {
		t.Errorf("Task.progress %v is not within 0-100", task.Progress)
	}
	if task.State == partnerapi.StateCompleted && (task.Result == nil || task.CompletedAt == "" || *task.Progress != 100) {
		t.Errorf("completed Task without result, completedAt or progress 100: %+v", task)
	}
	if task.State == partnerapi.StateFailed && task.Error == nil {
		t.Errorf("failed Task without error: %+v", task)
	}
}

// TestPartner_SeedExamples replays seed 003's examples (its quick starts,
// with the agent's id added where the platform needs to know it) against a
// platform with a real runtime, and checks the answers' shapes.
func TestPartner_SeedExamples(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, func(c *platform.Config) {
		c.A2ACardID = "storytailor-agent"
		c.A2ABaseURL = "https://storyintelligence.example"
	})
	agentID := d.agent.Agent.ID

	// 1) Discover capabilities (no credential: public agents only; with
	// the agent's key: that agent).
	var anon, keyed struct {
		AgentCard struct {
			AgentID, AgentName, AgentVersion, URL string
			Skills                                []struct{ ID, Name, URL string }
			Endpoints                             map[string]string
		} `json:"agentCard"`
	}
	d.p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/a2a/discovery", Header: http.Header{"Accept": {"application/json"}}}).Expect(t, http.StatusOK).Decode(t, &anon)
	d.keyed(http.MethodGet, "/a2a/discovery", nil).Expect(t, http.StatusOK).Decode(t, &keyed)
	c := keyed.AgentCard
	if c.AgentID != "storytailor-agent" || c.AgentName != "A2A Mesh" || c.AgentVersion == "" || c.URL != "https://storyintelligence.example/a2a" {
		t.Fatalf("card identity: %+v", c)
	}
	if c.Endpoints["webhook"] != "https://storyintelligence.example/a2a/webhook" || c.Endpoints["health"] != "https://storyintelligence.example/healthz" {
		t.Fatalf("card endpoints: %v", c.Endpoints)
	}
	if len(anon.AgentCard.Skills) != 0 || len(c.Skills) != 1 || c.Skills[0].ID != agentID || c.Skills[0].Name != "storyteller" {
		t.Fatalf("skills: anonymous %+v, keyed %+v", anon.AgentCard.Skills, c.Skills)
	}

	// 2) Call a JSON-RPC method (synchronous).
	msg := decodeRPC(t, d.keyed(http.MethodPost, "/a2a/message", map[string]any{
		"jsonrpc": "2.0", "id": "req-1", "method": "story.generate",
		"params": map[string]any{"characterId": "char_123", "storyType": "adventure", "theme": "friendship", "agentId": agentID},
	}).Expect(t, http.StatusOK))
	if msg.ID != "req-1" || msg.Error != nil {
		t.Fatalf("message answer: id %v, error %+v", msg.ID, msg.Error)
	}
	task := decodeTask(t, msg.Result)
	checkTask(t, task, partnerapi.Task{State: partnerapi.StateCompleted, Method: "story.generate", RemoteAgentID: agentID})
	var params map[string]any
	_ = json.Unmarshal(task.Params, &params)
	if params["characterId"] != "char_123" || params["theme"] != "friendship" {
		t.Fatalf("Task.params: %s", task.Params)
	}
	if got := task.Result.(map[string]any)["text"]; !strings.HasPrefix(got.(string), "story.generate {") || !strings.Contains(got.(string), `"characterId":"char_123"`) {
		t.Fatalf("the agent got %q", got)
	}

	// 1) Create a task (asynchronous), with a bearer JWT.
	signer, err := a2atoken.Load(context.Background(), d.p.Conn().JS)
	if err != nil {
		t.Fatal(err)
	}
	caller := d.p.CreateAgent("partner-agent")
	jwt, err := signer.Sign(a2atoken.TokenRequest{Subject: caller.ID, Audience: agentID, Scopes: []string{"a2a:send", "a2a:read"}})
	if err != nil {
		t.Fatal(err)
	}
	created := d.call(http.MethodPost, "/a2a/task", "Authorization", "Bearer "+jwt, map[string]any{
		"method": "story.generate", "params": map[string]any{"characterId": "char_123", "storyType": "adventure", "text": "wait for a story"},
		"clientAgentId": "partner-agent", "sessionId": "session-456", "remoteAgentId": agentID,
	}).Expect(t, http.StatusOK)
	async := decodeTask(t, created.Body)
	checkTask(t, async, partnerapi.Task{Method: "story.generate", SessionID: "session-456", ClientAgentID: "partner-agent", RemoteAgentID: agentID})
	if async.State != partnerapi.StateSubmitted && async.State != partnerapi.StateWorking {
		t.Fatalf("a new task is %s", async.State)
	}
	run := d.p.GetTask(async.TaskID)
	if run.InitiatorAgentID != caller.ID {
		t.Fatalf("the JWT's agent is not the run's initiator: %+v", run)
	}

	// 2) Stream status.
	events := streamStatus(t, d.p, async.TaskID, "Authorization", "Bearer "+jwt)
	first := <-events
	if first.TaskID != async.TaskID {
		t.Fatalf("first streamed Task: %+v", first)
	}
	d.p.WaitTask(async.TaskID, 30*time.Second, meshtest.StatusIs(mesh.StatusRunning))
	d.host.Gate <- struct{}{}
	var last partnerapi.Task
	for task := range events {
		last = task
	}
	checkTask(t, last, partnerapi.Task{State: partnerapi.StateCompleted, Method: "story.generate", SessionID: "session-456", ClientAgentID: "partner-agent"})
	if last.Result.(map[string]any)["text"] != "wait for a story" {
		t.Fatalf("streamed result: %+v", last.Result)
	}
	// The same session id is the same conversation.
	again := decodeTask(t, d.call(http.MethodPost, "/a2a/task", "Authorization", "Bearer "+jwt, map[string]any{
		"method": "story.continue", "params": map[string]any{"text": "and then?"}, "clientAgentId": "partner-agent", "sessionId": "session-456", "remoteAgentId": agentID,
	}).Expect(t, http.StatusOK).Body)
	if d.p.GetTask(again.TaskID).ConversationID != run.ConversationID {
		t.Fatal("the same sessionId started another conversation")
	}
	// The JSON form of status.
	status := decodeTask(t, d.call(http.MethodGet, "/a2a/status?taskId="+async.TaskID, "Authorization", "Bearer "+jwt, nil).Expect(t, http.StatusOK).Body)
	if status.State != partnerapi.StateCompleted || status.TaskID != async.TaskID {
		t.Fatalf("status: %+v", status)
	}
}

// streamStatus follows GET /a2a/status as Server-Sent Events and delivers
// each Task until the stream ends.
func streamStatus(t *testing.T, p *meshtest.Platform, taskID, header, value string) <-chan partnerapi.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.APIBase+"/a2a/status?taskId="+taskID, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(header, value)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		t.Fatalf("status stream: HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan partnerapi.Task, 64)
	go func() {
		defer cancel()
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "task":
				var task partnerapi.Task
				if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &task) == nil {
					out <- task
				}
			}
		}
	}()
	t.Cleanup(cancel)
	return out
}
