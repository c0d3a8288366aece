package a2aserver_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// TestMessage_ReachesTheAdapterAndItsPartsComeBack: the adapter's request
// carries the A2A message in input.message (its id, its role, its text,
// data and file-by-URL parts in order, the URL as given); the adapter's
// output.parts come back to the caller as a data part and a file part
// whose URL is the one the agent gave, on both versions.
func TestMessage_ReachesTheAdapterAndItsPartsComeBack(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{agent: meshtest.AgentOptions{Provider: newScripted()}})
	for _, version := range []string{"1.0", "0.3"} {
		t.Run(version, func(t *testing.T) {
			c := d.client(version, a2a.TransportProtocolJSONRPC)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			uri := a2a.NewFileURLPart("https://files.example.com/in/brief.pdf?sig=a%2Fb", "application/pdf")
			uri.Filename = "brief.pdf"
			msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("message for you"),
				a2a.NewDataPart(map[string]any{"city": "Lyon", "nights": 2}), uri)
			res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
			if err != nil {
				t.Fatal(err)
			}
			task, ok := res.(*a2a.Task)
			if !ok || task.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("answer %s", meshtest.JSON(res))
			}
			var data, file *a2a.Part
			for _, art := range task.Artifacts {
				for _, p := range art.Parts {
					switch p.Content.(type) {
					case a2a.Data:
						data = p
					case a2a.URL:
						file = p
					}
				}
			}
			if data == nil {
				t.Fatalf("no data part in %s", meshtest.JSON(task.Artifacts))
			}
			want := `{"message":{"message_id":"` + string(msg.ID) + `","parts":[` +
				`{"kind":"text","text":"message for you"},` +
				`{"data":{"city":"Lyon","nights":2},"kind":"data"},` +
				`{"kind":"file","mime_type":"application/pdf","name":"brief.pdf","uri":"https://files.example.com/in/brief.pdf?sig=a%2Fb"}],"role":"user"}}`
			if got := meshtest.JSON(data.Data()); got != want {
				t.Errorf("input.message as the adapter saw it:\n got %s\nwant %s", got, want)
			}
			if file == nil || string(file.URL()) != "https://files.example.com/out/summary.pdf?v=2" || file.Filename != "summary.pdf" || file.MediaType != "application/pdf" {
				t.Errorf("the agent's file by URL: %s", meshtest.JSON(file))
			}
		})
	}
}

// TestMessage_OneShotReplyIsAMessageNotATask: an adapter that answers with
// output.reply "message" answers a blocking send with the agent's message,
// on both versions and both bindings of 0.3's JSON-RPC shape.
func TestMessage_OneShotReplyIsAMessageNotATask(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{agent: meshtest.AgentOptions{Provider: newScripted()}})
	for _, version := range []string{"1.0", "0.3"} {
		for _, binding := range []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON} {
			t.Run(version+"/"+string(binding), func(t *testing.T) {
				c := d.client(version, binding)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("one-shot question")})
				if err != nil {
					t.Fatal(err)
				}
				reply, ok := res.(*a2a.Message)
				if !ok {
					t.Fatalf("the answer is not a message: %s", meshtest.JSON(res))
				}
				if reply.Role != a2a.MessageRoleAgent || len(reply.Parts) != 1 || reply.Parts[0].Text() != "the answer to one-shot question" || reply.TaskID != "" {
					t.Errorf("reply %s", meshtest.JSON(reply))
				}
			})
		}
	}
	// On the wire: a 0.3 result is a message ("kind": "message"), a 1.0
	// result holds a message, never a task.
	a := d.rpc("0.3", "message/send", map[string]any{"message": map[string]any{
		"kind": "message", "messageId": "m-one-shot-03", "role": "user", "parts": []any{map[string]any{"kind": "text", "text": "one-shot on the wire"}}}})
	var r03 struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal(a.body, &r03); err != nil || r03.Result["kind"] != "message" || r03.Result["role"] != "agent" {
		t.Errorf("0.3 answer %d %s", a.status, a.body)
	}
	a = d.rpc("1.0", "SendMessage", map[string]any{"message": map[string]any{
		"messageId": "m-one-shot-10", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "one-shot on the wire"}}}})
	var r10 struct {
		Result map[string]json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(a.body, &r10); err != nil || r10.Result["message"] == nil || r10.Result["task"] != nil {
		t.Errorf("1.0 answer %d %s", a.status, a.body)
	}
}

// TestMessage_DeclinedTaskIsRejected: an adapter that declines the task
// (output.rejected) ends it TASK_STATE_REJECTED (0.3: rejected), with its
// reason as the status message.
func TestMessage_DeclinedTaskIsRejected(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{agent: meshtest.AgentOptions{Provider: newScripted()}})
	for _, version := range []string{"1.0", "0.3"} {
		t.Run(version, func(t *testing.T) {
			c := d.client(version, a2a.TransportProtocolJSONRPC)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("decline this flight")})
			if err != nil {
				t.Fatal(err)
			}
			task, ok := res.(*a2a.Task)
			if !ok || task.Status.State != a2a.TaskStateRejected {
				t.Fatalf("answer %s", meshtest.JSON(res))
			}
			if task.Status.Message == nil || task.Status.Message.Parts[0].Text() != "I do not book flights" {
				t.Errorf("status message %s", meshtest.JSON(task.Status.Message))
			}
			got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
			if err != nil || got.Status.State != a2a.TaskStateRejected {
				t.Errorf("GetTask: %v %v", got, err)
			}
		})
	}
	a := d.rpc("0.3", "message/send", map[string]any{"message": map[string]any{
		"kind": "message", "messageId": "m-decline-03", "role": "user", "parts": []any{map[string]any{"kind": "text", "text": "decline on the wire"}}}})
	var r03 struct {
		Result struct {
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		} `json:"result"`
	}
	if err := json.Unmarshal(a.body, &r03); err != nil || r03.Result.Status.State != "rejected" {
		t.Errorf("0.3 answer %d %s", a.status, a.body)
	}
	a = d.rpc("1.0", "SendMessage", map[string]any{"message": map[string]any{
		"messageId": "m-decline-10", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "decline on the wire"}}}})
	var r10 struct {
		Result struct {
			Task struct {
				Status struct {
					State string `json:"state"`
				} `json:"status"`
			} `json:"task"`
		} `json:"result"`
	}
	if err := json.Unmarshal(a.body, &r10); err != nil || r10.Result.Task.Status.State != "TASK_STATE_REJECTED" {
		t.Errorf("1.0 answer %d %s", a.status, a.body)
	}
}

// TestListTasks_RejectedFilterFindsDeclinedTasksOnly: listing by
// TASK_STATE_REJECTED finds the tasks the agent declined, and listing by
// TASK_STATE_FAILED leaves them out.
func TestListTasks_RejectedFilterFindsDeclinedTasksOnly(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{agent: meshtest.AgentOptions{Provider: newScripted()}})
	c := d.client("1.0", a2a.TransportProtocolJSONRPC)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("decline to be listed")})
	if err != nil {
		t.Fatal(err)
	}
	declined, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("answer %s", meshtest.JSON(res))
	}
	if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("a plain task")}); err != nil {
		t.Fatal(err)
	}
	rejected, err := c.ListTasks(ctx, &a2a.ListTasksRequest{Status: a2a.TaskStateRejected})
	if err != nil {
		t.Fatal(err)
	}
	if len(rejected.Tasks) != 1 || rejected.Tasks[0].ID != declined.ID || rejected.Tasks[0].Status.State != a2a.TaskStateRejected {
		t.Errorf("rejected tasks: %s", meshtest.JSON(rejected.Tasks))
	}
	failed, err := c.ListTasks(ctx, &a2a.ListTasksRequest{Status: a2a.TaskStateFailed})
	if err != nil {
		t.Fatal(err)
	}
	if len(failed.Tasks) != 0 {
		t.Errorf("failed tasks: %s", meshtest.JSON(failed.Tasks))
	}
}
