package adapter

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
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

// The platform never sends a host's environment variables (it refuses
// them from callers): a request that carries some did not come from it.
// Posted to a command adapter running a bash script, {"BASH_ENV":
// "/dev/stdin"} made bash run the task's input as a script.
func TestRunTask_RefusesEnvironmentVariables(t *testing.T) {
	ran := make(chan string, 8)
	_, ts := startServer(t, Config{Provider: funcProvider(func(_ context.Context, task *provider.Task) (*provider.Result, error) {
		ran <- task.Request.TaskRunID
		return &provider.Result{Output: map[string]any{"text": "ran"}}, nil
	})})
	for _, env := range []string{
		`{"variables":{"BASH_ENV":"/dev/stdin"}}`,
		`{"working_directory":"/srv/project","variables":{"API_TOKEN":"value-7d2e"}}`,
	} {
		body := `{"task_run_id":"r","conversation_id":"c","input":{"text":"touch /tmp/pwned"},"environment":` + env + `}`
		r := post(t.Context(), ts.URL, body)
		status, msg := failureOf(t, r)
		if status != http.StatusBadRequest || !strings.Contains(msg, "environment.variables") || !strings.Contains(msg, "not accepted") {
			t.Errorf("environment %s: %d %q, want 400 naming environment.variables", env, status, msg)
		}
		if strings.Contains(msg, "value-7d2e") || strings.Contains(msg, "/dev/stdin") {
			t.Errorf("environment %s: the refusal quotes a value: %q", env, msg)
		}
	}
	select {
	case id := <-ran:
		t.Fatalf("task %s ran with the variables", id)
	default:
	}
	for _, env := range []string{`{"working_directory":"/srv/project"}`, `{"variables":{}}`, `null`} {
		body := `{"task_run_id":"r","conversation_id":"c","input":{"text":"x"},"environment":` + env + `}`
		if reply := parseReply(t, post(t.Context(), ts.URL, body)); reply.Kind != adapterapi.KindSuccess {
			t.Errorf("environment %s: reply %+v, want success", env, reply)
		}
	}
}
