package a2aserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// receiver is a loopback push endpoint that fails its first failFirst
// requests, then keeps what it is sent.
type receiver struct {
	srv       *httptest.Server
	mu        sync.Mutex
	failFirst int
	calls     int
	got       []push
}

type push struct {
	header http.Header
	body   map[string]any
}

func newReceiver(t *testing.T, failFirst int) *receiver {
	r := &receiver{failFirst: failFirst}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls++
		if r.calls <= r.failFirst {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		r.got = append(r.got, push{header: req.Header.Clone(), body: m})
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) pushes() []push {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]push(nil), r.got...)
}

// state of a 1.0 (StreamResponse) or 0.3 (task) notification.
func (p push) state() string {
	task := p.body
	if t, ok := p.body["task"].(map[string]any); ok {
		task = t
	}
	status, _ := task["status"].(map[string]any)
	s, _ := status["state"].(string)
	return s
}

// TestPush_DeliveredOnEveryStateChangeWithRetries: a push configuration
// given with a message (1.0, Authorization from its authentication) and one
// set later (0.3, X-A2A-Notification-Token) each get every state change of
// the task, in order, to a receiver that fails twice first: the webhooks
// service retries with backoff.
func TestPush_DeliveredOnEveryStateChangeWithRetries(t *testing.T) {
	t.Parallel()
	host := newScripted()
	d := startEndpoint(t, endpointOptions{
		platform: func(c *platform.Config) {
			c.AllowPrivateWebhooks = true
			c.WebhookRetryMin = 50 * time.Millisecond
			c.WebhookRetryMax = 200 * time.Millisecond
		},
		agent: meshtest.AgentOptions{Provider: host},
	})
	v1, v03 := newReceiver(t, 2), newReceiver(t, 2)
	c := d.client("1.0", a2a.TransportProtocolJSONRPC)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("wait for push"), Config: &a2a.SendMessageConfig{
		ReturnImmediately: true,
		PushConfig:        &a2a.PushConfig{ID: "v1", URL: v1.srv.URL + "/hook", Auth: &a2a.PushAuthInfo{Scheme: "Bearer", Credentials: "receiver-secret-1"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	taskID := res.(*a2a.Task).ID
	set := d.rpc("0.3", "tasks/pushNotificationConfig/set", map[string]any{"taskId": taskID,
		"pushNotificationConfig": map[string]any{"id": "v03", "url": v03.srv.URL + "/hook", "token": "receiver-token-03"}}).json(t)
	if set["result"] == nil {
		t.Fatalf("0.3 set: %v", set)
	}
	meshtest.Eventually(t, 20*time.Second, func() bool {
		g, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: taskID})
		return err == nil && g.Status.State == a2a.TaskStateWorking
	}, func() string { return "never working" })
	host.gate <- struct{}{}

	ended := func(r *receiver, final string) func() bool {
		return func() bool {
			got := r.pushes()
			return len(got) > 0 && got[len(got)-1].state() == final
		}
	}
	meshtest.Eventually(t, 30*time.Second, ended(v1, "TASK_STATE_COMPLETED"), func() string { return "1.0 pushes: " + meshtest.JSON(states(v1)) })
	meshtest.Eventually(t, 30*time.Second, ended(v03, "completed"), func() string { return "0.3 pushes: " + meshtest.JSON(states(v03)) })

	// 1.0: every state from the task's start (the configuration came with
	// the message), the task as a StreamResponse, the Authorization asked for.
	if got := strings.Join(states(v1), ","); got != "TASK_STATE_SUBMITTED,TASK_STATE_WORKING,TASK_STATE_COMPLETED" {
		t.Errorf("1.0 states %s", got)
	}
	for _, p := range v1.pushes() {
		if p.header.Get("Authorization") != "Bearer receiver-secret-1" || p.body["task"].(map[string]any)["id"] != string(taskID) {
			t.Errorf("1.0 push: %v %v", p.header, p.body)
		}
	}
	// 0.3: from the set on (the task was already working), the 0.3 task
	// object, with the notification token.
	if got := strings.Join(states(v03), ","); !strings.HasSuffix(got, "completed") || strings.Contains(got, "submitted") {
		t.Errorf("0.3 states %s", got)
	}
	for _, p := range v03.pushes() {
		if p.header.Get("X-A2A-Notification-Token") != "receiver-token-03" || p.body["kind"] != "task" || p.body["id"] != string(taskID) {
			t.Errorf("0.3 push: %v %v", p.header, p.body)
		}
	}
	last := v1.pushes()[len(v1.pushes())-1].body["task"].(map[string]any)
	if arts, _ := last["artifacts"].([]any); len(arts) == 0 {
		t.Errorf("the completed task's push has no result: %v", last)
	}
	for _, r := range []*receiver{v1, v03} {
		r.mu.Lock()
		if r.calls != len(r.got)+2 {
			t.Errorf("receiver was called %d times for %d pushes (2 failures expected)", r.calls, len(r.got))
		}
		r.mu.Unlock()
	}
}

func states(r *receiver) []string {
	var out []string
	for _, p := range r.pushes() {
		out = append(out, p.state())
	}
	return out
}

// TestPush_PrivateTargetsRefusedAndGiveUpAnnounced: without
// --allow-private-webhooks a loopback push target is refused; with it, a
// receiver that never accepts is given up on after the retry window, and
// the give-up is a webhook.delivery_failed event.
func TestPush_PrivateTargetsRefusedAndGiveUpAnnounced(t *testing.T) {
	t.Parallel()
	strict := startEndpoint(t, endpointOptions{})
	res := strict.rpc("1.0", "SendMessage", map[string]any{"message": map[string]any{"messageId": mesh.NewID(), "role": "ROLE_USER", "parts": []any{map[string]any{"text": "x"}}}}).json(t)
	taskID := res["result"].(map[string]any)["task"].(map[string]any)["id"].(string)
	for _, target := range []string{"http://127.0.0.1:9/hook", "http://169.254.169.254/latest/meta-data", "http://10.0.0.1/hook"} {
		a := strict.rpc("1.0", "CreateTaskPushNotificationConfig", map[string]any{"taskId": taskID, "url": target})
		checkRPCError(t, "private target "+target, "1.0", a, -32602, "INVALID_PARAMS")
		if msg := rpcError(t, a)["message"].(string); !strings.Contains(msg, "allow-private-webhooks") {
			t.Errorf("the refusal does not say how to allow it: %s", msg)
		}
	}

	host := newScripted()
	d := startEndpoint(t, endpointOptions{
		platform: func(c *platform.Config) {
			c.AllowPrivateWebhooks = true
			c.WebhookRetryMin = 20 * time.Millisecond
			c.WebhookRetryMax = 50 * time.Millisecond
			c.WebhookRetryFor = 300 * time.Millisecond
		},
		agent: meshtest.AgentOptions{Provider: host},
	})
	never := newReceiver(t, 1<<30)
	c := d.client("1.0", a2a.TransportProtocolJSONRPC)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("hello"), Config: &a2a.SendMessageConfig{
		PushConfig: &a2a.PushConfig{URL: never.srv.URL, Token: "never-seen"}}}); err != nil {
		t.Fatal(err)
	}
	cons, err := d.p.Conn().JS.OrderedConsumer(ctx, bus.EventStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{bus.EventFilter(d.agent.Agent.ID, string(mesh.KindWebhook), "")},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(20 * time.Second))
	if err != nil {
		t.Fatalf("no delivery_failed event: %v", err)
	}
	if typ := msg.Headers().Get("ce-type"); typ != mesh.EventWebhookDeliveryFailed {
		t.Fatalf("event %s", typ)
	}
	var data map[string]any
	_ = json.Unmarshal(msg.Data(), &data)
	if data["format"] != "a2a" || data["last_status_code"] != float64(503) || data["attempt_count"].(float64) < 2 {
		t.Errorf("delivery_failed data: %v", data)
	}
	if strings.Contains(string(msg.Data()), "never-seen") || strings.Contains(string(msg.Data()), never.srv.URL) {
		t.Errorf("the event shows the token or the URL: %s", msg.Data())
	}
}

// TestPush_03RESTTakesBothConfigBodies: the 0.3 REST route that creates a
// push configuration takes the TaskPushNotificationConfig the 0.3 proto
// mapping makes the body (as the JavaScript client sends it) and the whole
// CreateTaskPushNotificationConfigRequest (as the Go client sends it).
func TestPush_03RESTTakesBothConfigBodies(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{platform: func(c *platform.Config) { c.AllowPrivateWebhooks = true }})
	res := d.rpc("1.0", "SendMessage", map[string]any{"message": map[string]any{"messageId": mesh.NewID(), "role": "ROLE_USER", "parts": []any{map[string]any{"text": "x"}}}}).json(t)
	taskID := res["result"].(map[string]any)["task"].(map[string]any)["id"].(string)
	path := "/a2a/" + d.agent.Agent.ID + "/v1/tasks/" + taskID + "/pushNotificationConfigs"
	h := map[string]string{"X-API-Key": d.key}
	for id, body := range map[string]string{
		"bare":    `{"name":"tasks/` + taskID + `/pushNotificationConfigs/bare","pushNotificationConfig":{"id":"bare","url":"http://127.0.0.1:9/bare","token":"t1"}}`,
		"request": `{"parent":"tasks/` + taskID + `","configId":"request","config":{"pushNotificationConfig":{"id":"request","url":"http://127.0.0.1:9/request"}}}`,
	} {
		a := d.do(raw{method: http.MethodPost, path: path, header: h, body: body})
		if a.status != http.StatusOK || !strings.Contains(string(a.body), `"`+id+`"`) {
			t.Fatalf("%s body: %d %s", id, a.status, a.body)
		}
	}
	a := d.do(raw{method: http.MethodGet, path: path, header: h})
	if a.status != http.StatusOK || !strings.Contains(string(a.body), `"bare"`) || !strings.Contains(string(a.body), `"request"`) {
		t.Fatalf("list: %d %s", a.status, a.body)
	}
	// Neither form: a parse error, nothing created.
	if a := d.do(raw{method: http.MethodPost, path: path, header: h, body: `{"url":"http://127.0.0.1:9/x"}`}); a.status != http.StatusBadRequest {
		t.Fatalf("a body of neither form: %d %s", a.status, a.body)
	}
}
