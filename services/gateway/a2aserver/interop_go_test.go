package a2aserver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	legacy "github.com/a2aproject/a2a-go/a2a"
	legacyclient "github.com/a2aproject/a2a-go/a2aclient"
	legacycard "github.com/a2aproject/a2a-go/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestInterop_GoClientsOfBothVersions drives one agent URL with the official
// Go clients: a2a-go v2 (1.0) and its 0.3 compatibility client over JSON-RPC
// and HTTP+JSON. Each resolves the card, picks its transport, sends
// (blocking and not), streams, gets with historyLength, lists, cancels a
// task whose host is working (the host process is stopped) and manages push
// configurations.
func TestInterop_GoClientsOfBothVersions(t *testing.T) {
	t.Parallel()
	host := newScripted()
	d := startEndpoint(t, endpointOptions{platform: func(c *platform.Config) { c.AllowPrivateWebhooks = true }, agent: meshtest.AgentOptions{Provider: host}})
	for _, tc := range []struct {
		version string
		binding a2a.TransportProtocol
	}{
		{"1.0", a2a.TransportProtocolJSONRPC},
		{"1.0", a2a.TransportProtocolHTTPJSON},
		{"0.3", a2a.TransportProtocolJSONRPC},
		{"0.3", a2a.TransportProtocolHTTPJSON},
	} {
		name := tc.version + " " + string(tc.binding)
		c := d.client(tc.version, tc.binding)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)

		// Blocking send: the echo comes back as the result artifact.
		res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("hello from " + name)})
		if err != nil {
			t.Fatalf("%s: send: %v", name, err)
		}
		task, ok := res.(*a2a.Task)
		if !ok || task.Status.State != a2a.TaskStateCompleted || resultText(task) != "hello from "+name {
			t.Fatalf("%s: send answered %#v", name, res)
		}
		if task.ContextID == "" || !mesh.ValidID(string(task.ID)) {
			t.Errorf("%s: task id %q context %q", name, task.ID, task.ContextID)
		}

		// Get, with and without history.
		got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
		if err != nil || got.Status.State != a2a.TaskStateCompleted || len(got.History) != 1 || got.History[0].Parts[0].Text() != "hello from "+name {
			t.Fatalf("%s: get: %v %+v", name, err, got)
		}
		zero := 0
		if got, err = c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID, HistoryLength: &zero}); err != nil || len(got.History) != 0 {
			t.Errorf("%s: get with historyLength 0: %v, %d messages", name, err, len(got.History))
		}

		// Stream: the task first, then updates, ending completed.
		var states []a2a.TaskState
		var streamed string
		for ev, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("stream " + name)}) {
			if err != nil {
				t.Fatalf("%s: stream: %v", name, err)
			}
			switch v := ev.(type) {
			case *a2a.Task:
				// A fast host may have finished before the stream began:
				// then the task itself carries the result.
				states = append(states, v.Status.State)
				streamed += resultText(v)
			case *a2a.TaskStatusUpdateEvent:
				states = append(states, v.Status.State)
			case *a2a.TaskArtifactUpdateEvent:
				for _, p := range v.Artifact.Parts {
					streamed += p.Text()
				}
			}
		}
		if len(states) == 0 || states[len(states)-1] != a2a.TaskStateCompleted || streamed != "stream "+name {
			t.Errorf("%s: stream states %v, artifact text %q", name, states, streamed)
		}

		// List: ListTasks is in 1.0 and in 0.3's HTTP+JSON binding.
		if tc.version == "1.0" || tc.binding == a2a.TransportProtocolHTTPJSON {
			l, err := c.ListTasks(ctx, &a2a.ListTasksRequest{PageSize: 1})
			if err != nil || len(l.Tasks) != 1 || l.NextPageToken == "" || (tc.version == "1.0" && l.TotalSize < 2) {
				t.Fatalf("%s: list: %v %+v", name, err, l)
			}
			next, err := c.ListTasks(ctx, &a2a.ListTasksRequest{PageSize: 1, PageToken: l.NextPageToken})
			if err != nil || len(next.Tasks) != 1 || next.Tasks[0].ID >= l.Tasks[0].ID {
				t.Errorf("%s: second page: %v %+v", name, err, next)
			}
		}

		// Non-blocking send of a task the host holds, then cancel it.
		res, err = c.SendMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("wait " + name), Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
		if err != nil {
			t.Fatalf("%s: non-blocking send: %v", name, err)
		}
		waiting := res.(*a2a.Task)
		if waiting.Status.State.Terminal() {
			t.Fatalf("%s: a non-blocking send answered %s", name, waiting.Status.State)
		}
		meshtest.Eventually(t, 20*time.Second, func() bool {
			got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: waiting.ID})
			return err == nil && got.Status.State == a2a.TaskStateWorking
		}, func() string { return name + ": the task never started" })
		host.waitStarted(t, string(waiting.ID))

		// Push configurations: create, get, list, delete.
		pc, err := c.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: waiting.ID, ID: "hook-1", URL: "http://127.0.0.1:9/hook", Token: "tok-" + tc.version})
		if err != nil || pc.ID != "hook-1" || pc.Token != "tok-"+tc.version {
			t.Fatalf("%s: create push config: %v %+v", name, err, pc)
		}
		if g, err := c.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: waiting.ID, ID: "hook-1"}); err != nil || g.URL != "http://127.0.0.1:9/hook" {
			t.Errorf("%s: get push config: %v %+v", name, err, g)
		}
		if l, err := c.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: waiting.ID}); err != nil || len(l) != 1 {
			t.Errorf("%s: list push configs: %v %d", name, err, len(l))
		}
		if err := c.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: waiting.ID, ID: "hook-1"}); err != nil {
			t.Errorf("%s: delete push config: %v", name, err)
		}
		if l, err := c.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: waiting.ID}); err != nil || len(l) != 0 {
			t.Errorf("%s: after delete: %v %d", name, err, len(l))
		}

		canceled, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: waiting.ID})
		if err != nil || canceled.Status.State != a2a.TaskStateCanceled {
			t.Fatalf("%s: cancel: %v %+v", name, err, canceled)
		}
		select {
		case id := <-host.stopped:
			if id != string(waiting.ID) {
				t.Errorf("%s: the host stopped %s, not %s", name, id, waiting.ID)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("%s: the host was never told to stop", name)
		}
		// A terminal task is not cancelable. (The SDK's 0.3 JSON-RPC client
		// expects 1.0's array in error.data and cannot decode the 0.3
		// object; the 0.3 Go module decodes it, see TestInterop_LegacyGoClient.)
		_, err = c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: waiting.ID})
		if tc.version == "0.3" && tc.binding == a2a.TransportProtocolJSONRPC {
			if err == nil {
				t.Errorf("%s: second cancel succeeded", name)
			}
		} else if !errors.Is(err, a2a.ErrTaskNotCancelable) {
			t.Errorf("%s: second cancel: %v, want TaskNotCancelable", name, err)
		}
		cancel()
	}
}

// TestInterop_LegacyGoClient: the 0.3 Go module (a2a-go v0.3.x, an
// independent client of the 0.3 protocol) resolves the card and sends,
// streams, gets and cancels over JSON-RPC without any version header, and
// decodes the 0.3 error shape (data an object).
func TestInterop_LegacyGoClient(t *testing.T) {
	t.Parallel()
	host := newScripted()
	d := startEndpoint(t, endpointOptions{agent: meshtest.AgentOptions{Provider: host}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	card, err := legacycard.DefaultResolver.Resolve(ctx, d.url)
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	if card.URL != d.url || card.PreferredTransport != legacy.TransportProtocolJSONRPC || card.ProtocolVersion != "0.3" {
		t.Fatalf("0.3 card: url %q transport %q version %q", card.URL, card.PreferredTransport, card.ProtocolVersion)
	}
	c, err := legacyclient.NewFromCard(ctx, card, legacyclient.WithJSONRPCTransport(keyClient(d.key)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.SendMessage(ctx, &legacy.MessageSendParams{Message: legacy.NewMessage(legacy.MessageRoleUser, legacy.TextPart{Text: "legacy hello"})})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	task := res.(*legacy.Task)
	if task.Status.State != legacy.TaskStateCompleted || len(task.Artifacts) == 0 || task.Artifacts[len(task.Artifacts)-1].Parts[0].(legacy.TextPart).Text != "legacy hello" {
		t.Fatalf("send answered %+v", task)
	}
	var last legacy.TaskState
	for ev, err := range c.SendStreamingMessage(ctx, &legacy.MessageSendParams{Message: legacy.NewMessage(legacy.MessageRoleUser, legacy.TextPart{Text: "legacy stream"})}) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		switch v := ev.(type) {
		case *legacy.Task:
			last = v.Status.State
		case *legacy.TaskStatusUpdateEvent:
			last = v.Status.State
		}
	}
	if last != legacy.TaskStateCompleted {
		t.Errorf("stream ended in %q", last)
	}
	got, err := c.GetTask(ctx, &legacy.TaskQueryParams{ID: task.ID})
	if err != nil || got.Status.State != legacy.TaskStateCompleted {
		t.Errorf("get: %v %+v", err, got)
	}
	// An unknown task: the 0.3 error, decoded by the 0.3 client.
	_, err = c.GetTask(ctx, &legacy.TaskQueryParams{ID: legacy.TaskID(mesh.NewID())})
	if !errors.Is(err, legacy.ErrTaskNotFound) {
		t.Errorf("unknown task: %v, want TaskNotFound", err)
	}
	res, err = c.SendMessage(ctx, &legacy.MessageSendParams{Message: legacy.NewMessage(legacy.MessageRoleUser, legacy.TextPart{Text: "wait legacy"}),
		Config: &legacy.MessageSendConfig{Blocking: ptr(false)}})
	if err != nil {
		t.Fatal(err)
	}
	waiting := res.(*legacy.Task)
	meshtest.Eventually(t, 20*time.Second, func() bool {
		g, err := c.GetTask(ctx, &legacy.TaskQueryParams{ID: waiting.ID})
		return err == nil && g.Status.State == legacy.TaskStateWorking
	}, func() string { return "never working" })
	host.waitStarted(t, string(waiting.ID))
	canceled, err := c.CancelTask(ctx, &legacy.TaskIDParams{ID: waiting.ID})
	if err != nil || canceled.Status.State != legacy.TaskStateCanceled {
		t.Fatalf("cancel: %v %+v", err, canceled)
	}
	select {
	case <-host.stopped:
	case <-time.After(15 * time.Second):
		t.Fatal("the host was never told to stop")
	}
	if _, err := c.CancelTask(ctx, &legacy.TaskIDParams{ID: waiting.ID}); !errors.Is(err, legacy.ErrTaskNotCancelable) {
		t.Errorf("second cancel: %v, want TaskNotCancelable", err)
	}
}

func ptr[T any](v T) *T { return &v }
