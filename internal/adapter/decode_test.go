package adapter

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/adapterapi"
)

func TestDecodeRunTask_SeedExample(t *testing.T) {
	req, err := decodeRunTask([]byte(seedRequest))
	if err != nil {
		t.Fatal(err)
	}
	want := adapterapi.RunTaskRequest{
		TaskRunID: "task_run_id", ConversationID: "conversation_id", WorkspaceID: "workspace_id",
		TaskType: "chat", InitiatorAgentID: "initiator_agent_id", TargetAgentID: "target_agent_id",
		Platform: adapterapi.Platform{Name: "A2A", Origin: "ysee.tech"},
	}
	got := req
	got.Input = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}
	if req.InputText() != "user request" {
		t.Fatalf("input.text = %q", req.InputText())
	}
}

func FuzzDecodeRunTask(f *testing.F) {
	for _, seed := range []string{
		seedRequest,
		taskBody("r1"),
		`{"task_run_id":"r","input":{},"instructions":"Be brief.","new_field":[1,2,3]}`,
		`{"task_run_id":"r","input":"x"}`,
		`{"task_run_id":"","input":{}}`,
		`{"task_run_id":"r","input":{},"runtime_token":"x"}`,
		`{"task_run_id":{"a":1},"input":{}}`,
		`[]`, `null`, `"x"`, ``, `{`, " \n{\"task_run_id\":\"r\",\"input\":{}} ",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeRunTask(body)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		// Whatever was accepted is a JSON object with a task run id and an
		// object input, and it decodes the same way again.
		if !json.Valid(body) || firstByte(body) != '{' {
			t.Fatalf("accepted a body that is not a JSON object: %q", body)
		}
		if strings.TrimSpace(req.TaskRunID) == "" || firstByte(req.Input) != '{' || !json.Valid(req.Input) {
			t.Fatalf("accepted an invalid request: %+v", req)
		}
		var again adapterapi.RunTaskRequest
		if err := json.Unmarshal(body, &again); err != nil || again.TaskRunID != req.TaskRunID {
			t.Fatalf("decodes differently the second time: %v", err)
		}
		_ = req.InputText()
	})
}
