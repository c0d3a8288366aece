package envelope_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestEnvelope_ExecutionsAskForACredential: the execution history without
// any credential is 401 with a challenge, like every other route that
// needs one; a credential that is not the owner's is 403; a wrong one 401.
func TestEnvelope_ExecutionsAskForACredential(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t)
	for _, tc := range []struct {
		name   string
		header http.Header
		status int
		code   mesh.Code
	}{
		{"no credential", nil, http.StatusUnauthorized, mesh.CodeUnauthorized},
		{"unknown API key", http.Header{"X-Api-Key": {"a2akey_" + strings.Repeat("x", 43)}}, http.StatusUnauthorized, mesh.CodeUnauthorized},
		{"agent API key", http.Header{"X-Api-Key": {d.key}}, http.StatusForbidden, mesh.CodeForbidden},
	} {
		r := d.p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/api/executions", Header: tc.header})
		e := r.ExpectError(t, tc.status, tc.code)
		challenge := r.Header.Get("WWW-Authenticate")
		if tc.status == http.StatusUnauthorized && !strings.Contains(challenge, "Bearer") {
			t.Errorf("%s: 401 without a WWW-Authenticate challenge (%q)", tc.name, challenge)
		}
		if e.Error.Message == "" {
			t.Errorf("%s: no message", tc.name)
		}
	}
}

// TestEnvelope_EnvironmentVariablesAreRefusedAndNeverStored: a JetStream
// bucket is a log on disk, so a variable erased from a run record later
// would stay in its file. execute-agent with environmentVariables is
// refused (400 INVALID_PARAMS) before anything is created, and no file of
// the platform's data dir holds the value; a working directory alone still
// reaches the host.
func TestEnvelope_EnvironmentVariablesAreRefusedAndNeverStored(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t)
	agentID := d.agent.Agent.ID
	marker := "env-marker-" + mesh.NewID()

	m := decode(t, d.post(d.key, request("with-variables", agentID, "execute-agent", map[string]any{
		"agentId": agentID, "input": "run with a secret", "workingDirectory": "/srv/project",
		"environmentVariables": map[string]any{"API_TOKEN": marker},
	})).Expect(t, http.StatusBadRequest), "with-variables")
	if m.Payload.Error.Code != "INVALID_PARAMS" || !strings.Contains(m.Payload.Error.Message, "environmentVariables") || strings.Contains(m.Payload.Error.Message, marker) {
		t.Fatalf("execute with variables: %+v", m.Payload.Error)
	}
	var list struct {
		TaskRuns []mesh.TaskRun `json:"task_runs"`
	}
	d.p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?agent_id=" + agentID, Owner: true}).Expect(t, http.StatusOK).Decode(t, &list)
	if len(list.TaskRuns) != 0 {
		t.Fatalf("the refused execution created %d runs", len(list.TaskRuns))
	}

	// The platform REST API refuses them too: every endpoint creates runs there.
	d.p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs", Owner: true, JSON: map[string]any{
		"target_agent_id": agentID, "input": map[string]any{"text": "x"},
		"environment": map[string]any{"variables": map[string]any{"API_TOKEN": marker}},
	}}).ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)

	// A working directory alone is no secret: it still reaches the host.
	r := d.post(d.key, request("with-directory", agentID, "execute-agent", map[string]any{
		"agentId": agentID, "input": "Generated response from agent", "workingDirectory": "/srv/" + marker,
	})).Expect(t, http.StatusOK)
	decode(t, r, "with-directory")
	select {
	case env := <-d.host.Environments:
		if env == nil || env.WorkingDirectory != "/srv/"+marker || len(env.Variables) != 0 {
			t.Fatalf("the host got the environment %+v", env)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the host never ran the task")
	}

	// No file of the data dir holds a variable's value (the directory, which
	// is no secret, shows the scan reads the store).
	variable := []byte(`"API_TOKEN":"` + marker)
	directory := false
	for path, content := range meshtest.Files(t, d.p.DataDir) {
		if strings.Contains(content, string(variable)) || strings.Contains(content, "API_TOKEN") {
			t.Errorf("the variable is stored in %s", path)
		}
		directory = directory || strings.Contains(content, "/srv/"+marker)
	}
	if !directory {
		t.Fatalf("the working directory is in no file under the data dir: the scan reads nothing useful")
	}
}
