package envelope_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// seed002Execute is seed 002's execute-agent request as the seed writes it,
// with the placeholders filled in: the agent, the input, a working
// directory and the one environment variable, VARIABLE_NAME.
func seed002Execute(id, agentID, input, dir, value string) string {
	return `{
  "a2a": {
    "protocol": "a2a",
    "version": "1.0",
    "id": "` + id + `",
    "timestamp": "2025-11-18T10:00:00.000Z",
    "type": "request"
  },
  "context": {
    "from": "source-agent-id",
    "to": "` + agentID + `",
    "conversationId": "conversation-id"
  },
  "payload": {
    "method": "execute-agent",
    "params": {
      "agentId": "` + agentID + `",
      "input": "` + input + `",
      "workingDirectory": "` + dir + `",
      "environmentVariables": {
        "VARIABLE_NAME": "` + value + `"
      }
    }
  }
}`
}

// TestEnvelope_Seed002EnvironmentVariablesReachTheHostAndNoStoreHoldsThem:
// seed 002's execute-agent with environmentVariables, sent as written,
// completes on a real runtime (the official engine, a real adapter, the
// command provider) whose host sees VARIABLE_NAME with the caller's value.
// The gateway sealed it to the runtime's key before anything was stored:
// no file of the platform's data dir holds the value, while the run works
// and after it ended; the run record holds the ciphertext while the run
// works and none once it ended; and the logs, the events and the API's
// answers carry none of it.
func TestEnvelope_Seed002EnvironmentVariablesReachTheHostAndNoStoreHoldsThem(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	gate := filepath.Join(t.TempDir(), "gate")
	script := filepath.Join(t.TempDir(), "host.sh")
	// The host tells whether VARIABLE_NAME is set and the digest of its
	// value, never the value; it waits for the test between the two.
	body := "#!/bin/sh\ncat >/dev/null\n: > '" + gate + ".started'\n" +
		"while [ ! -e '" + gate + ".go' ]; do sleep 0.02; done\n" +
		"if [ -n \"${VARIABLE_NAME+x}\" ]; then printf 'VARIABLE_NAME is set, sha256 %s\\n' \"$(printf %s \"$VARIABLE_NAME\" | sha256sum | cut -d' ' -f1)\"; else echo 'VARIABLE_NAME is not set'; fi\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	host, err := provider.NewCommand(provider.CommandConfig{Argv: []string{script}, Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	a := meshtest.StartOnlineAgent(t, p, meshtest.AgentOptions{Name: "Claude Code Agent", Provider: host})
	var k meshapi.CreateA2AKeyResponse
	p.Do(http.MethodPost, "/a2a/"+a.Agent.ID+"/api-keys", map[string]any{"name": "envelope"}, &k)

	value := "seed002-secret-" + mesh.NewID()
	dir := "/srv/dir-" + mesh.NewID()
	sum := sha256.Sum256([]byte(value))
	answered := make(chan *http.Response, 1)
	var answer []byte
	go func() {
		req, _ := http.NewRequest(http.MethodPost, p.APIBase+"/a2a", strings.NewReader(seed002Execute("seed-request", a.Agent.ID, "Generated response from agent", dir, value)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", k.APIKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- nil
			return
		}
		answer, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		answered <- resp
	}()

	meshtest.Eventually(t, 30*time.Second, func() bool { _, err := os.Stat(gate + ".started"); return err == nil },
		func() string {
			select {
			case resp := <-answered:
				answered <- resp
				return "the host never started the task; execute-agent answered: " + meshtest.MaskCredentials(string(answer))
			default:
				return "the host never started the task"
			}
		})
	var runs struct {
		TaskRuns []mesh.TaskRun `json:"task_runs"`
	}
	listing := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?agent_id=" + a.Agent.ID, Owner: true}).Expect(t, http.StatusOK)
	listing.Decode(t, &runs)
	if len(runs.TaskRuns) != 1 {
		t.Fatalf("%d runs, want the one execution", len(runs.TaskRuns))
	}
	runID := runs.TaskRuns[0].ID
	during := storedRun(t, p, runID)
	if during.Environment == nil || during.Environment.Sealed == nil || len(during.Environment.Variables) != 0 ||
		during.Environment.Sealed.RuntimeID != a.Attached.RuntimeID {
		t.Fatalf("while the run works its record holds %+v, want the variables sealed to runtime %s and none in the clear", during.Environment, a.Attached.RuntimeID)
	}
	scan := func(when string) {
		t.Helper()
		meshtest.NoFileHolds(t, p.DataDir, value, dir, when)
	}
	scan("while the run works")

	if err := os.WriteFile(gate+".go", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var resp *http.Response
	select {
	case resp = <-answered:
	case <-time.After(60 * time.Second):
		t.Fatal("execute-agent never answered")
	}
	if resp == nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("execute-agent answered %v: %s", resp, meshtest.MaskCredentials(string(answer)))
	}
	var m struct {
		Payload struct {
			Result struct {
				Output      string `json:"output"`
				ExecutionID string `json:"executionId"`
			} `json:"result"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(answer, &m); err != nil {
		t.Fatal(err)
	}
	if want := "VARIABLE_NAME is set, sha256 " + hex.EncodeToString(sum[:]); m.Payload.Result.Output != want || m.Payload.Result.ExecutionID != runID {
		t.Fatalf("output %q of execution %s, want %q of %s", m.Payload.Result.Output, m.Payload.Result.ExecutionID, want, runID)
	}
	run := p.WaitTask(runID, 30*time.Second, meshtest.StatusIs(mesh.StatusCompleted))
	if after := storedRun(t, p, runID); after.Environment != nil {
		t.Fatalf("the ended run's record still holds its environment: %+v", after.Environment)
	}
	scan("after the run")

	texts := map[string]string{
		"platform logs": p.Logs.String(),
		"events":        p.StoredEvents(t),
		"answer":        string(answer),
		"run":           meshtest.JSON(run),
		"listing":       string(listing.Body),
		"executions":    string(p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/api/executions", Owner: true}).Expect(t, http.StatusOK).Body),
	}
	meshtest.AssertNoSecrets(t, []string{value}, texts)
	if !strings.Contains(texts["events"], runID) {
		t.Fatalf("the event scan misses the run's events")
	}
}

// storedRun reads a run's record straight from its bucket: what the
// platform keeps, runtime-only fields included.
func storedRun(t *testing.T, p *meshtest.Platform, runID string) mesh.TaskRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := p.Conn().JS.KeyValue(ctx, bus.BucketRuns)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, runID)
	if err != nil {
		t.Fatalf("run %s: %v", runID, err)
	}
	var run mesh.TaskRun
	if err := json.Unmarshal(e.Value(), &run); err != nil {
		t.Fatal(err)
	}
	return run
}

// TestEnvelope_ForbiddenVariableNamesAreRefusedByName: variables a host is
// never given (PATH, LD_PRELOAD, DYLD_*, BASH_ENV, NODE_OPTIONS…) are
// refused with 400, the message naming each and quoting no value, and
// nothing is created, through the envelope and through POST /task-runs.
func TestEnvelope_ForbiddenVariableNamesAreRefusedByName(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t)
	agentID := d.agent.Agent.ID
	value := "forbidden-value-" + mesh.NewID()
	vars := map[string]any{"LD_PRELOAD": value, "DYLD_INSERT_LIBRARIES": value, "BASH_ENV": value, "NODE_OPTIONS": value, "PATH": value, "API_TOKEN": value}
	names := []string{"BASH_ENV", "DYLD_INSERT_LIBRARIES", "LD_PRELOAD", "NODE_OPTIONS", "PATH"}

	m := decode(t, d.post(d.key, request("forbidden", agentID, "execute-agent", map[string]any{
		"agentId": agentID, "input": "x", "environmentVariables": vars,
	})).Expect(t, http.StatusBadRequest), "forbidden")
	if m.Payload.Error.Code != "INVALID_PARAMS" || strings.Contains(m.Payload.Error.Message, value) || strings.Contains(m.Payload.Error.Message, "API_TOKEN") {
		t.Fatalf("envelope refusal: %+v", m.Payload.Error)
	}
	for _, n := range names {
		if !strings.Contains(m.Payload.Error.Message, n) {
			t.Errorf("the envelope refusal does not name %s: %s", n, m.Payload.Error.Message)
		}
	}
	e := d.p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs", Owner: true, JSON: map[string]any{
		"target_agent_id": agentID, "input": map[string]any{"text": "x"}, "environment": map[string]any{"variables": vars},
	}}).ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
	if !strings.Contains(e.Error.Message, strings.Join(names, ", ")) || strings.Contains(e.Error.Message, value) {
		t.Fatalf("POST /task-runs refusal: %q", e.Error.Message)
	}
	var list struct {
		TaskRuns []mesh.TaskRun `json:"task_runs"`
	}
	d.p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?agent_id=" + agentID, Owner: true}).Expect(t, http.StatusOK).Decode(t, &list)
	if len(list.TaskRuns) != 0 {
		t.Fatalf("the refused requests created %d runs", len(list.TaskRuns))
	}
}

// TestTaskRuns_VariablesForAnAgentWithoutASealingKeyAreRefused: an agent
// with no runtime, and an agent whose runtime paired without a sealing key
// (an older a2a-runtime), cannot be given variables: 409 NO_SEALING_KEY,
// the second saying to pair again, and nothing is created.
func TestTaskRuns_VariablesForAnAgentWithoutASealingKeyAreRefused(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	lonely := p.CreateAgent("no runtime")
	older := p.CreateAgent("older runtime")
	p.Attach(older.ID) // attach-via-pairing without a sealing_key
	value := "keyless-value-" + mesh.NewID()
	for _, tc := range []struct {
		agent mesh.Agent
		says  string
	}{{lonely, "no active runtime"}, {older, "pair it again"}} {
		e := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs", Owner: true, JSON: map[string]any{
			"target_agent_id": tc.agent.ID, "input": map[string]any{"text": "x"},
			"environment": map[string]any{"variables": map[string]any{"API_TOKEN": value}},
		}}).ExpectError(t, http.StatusConflict, mesh.CodeNoSealingKey)
		if !strings.Contains(e.Error.Message, tc.says) || strings.Contains(e.Error.Message, value) {
			t.Errorf("agent %s: %q, want it to say %q", tc.agent.Name, e.Error.Message, tc.says)
		}
		if n := p.KeyCount(t, bus.BucketRuns); n != 0 {
			t.Fatalf("the refusals stored %d runs", n)
		}
	}
	for path, content := range meshtest.Files(t, p.DataDir) {
		if bytes.Contains([]byte(content), []byte(value)) {
			t.Errorf("the refused value is stored in %s", path)
		}
	}
}

// TestTaskRuns_VariablesSealedForAReplacedRuntimeFailTheRunWithSealedForAnotherRuntime:
// variables are sealed to the agent's active runtime when the run is
// created; when the agent is paired again before the run is claimed, the
// new runtime cannot open them, and the run fails with
// SEALED_FOR_ANOTHER_RUNTIME, its host never started.
func TestTaskRuns_VariablesSealedForAReplacedRuntimeFailTheRunWithSealedForAnotherRuntime(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("paired twice")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, err := runtimeengine.Pair(ctx, runtimeengine.PairRequest{Code: p.PairingCode(agent.ID), APIBase: p.APIBase, DeviceName: "first"})
	if err != nil {
		t.Fatalf("pair: %v", err)
	}
	value := "replaced-value-" + mesh.NewID()
	run := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs", Owner: true, JSON: map[string]any{
		"target_agent_id": agent.ID, "input": map[string]any{"text": "x"},
		"environment": map[string]any{"variables": map[string]any{"API_TOKEN": value}},
	}}).Expect(t, http.StatusCreated).Run(t)
	if sv := storedRun(t, p, run.ID).Environment; sv == nil || sv.Sealed == nil || sv.Sealed.RuntimeID != first.RuntimeID {
		t.Fatalf("the run's variables are not sealed to the first runtime: %+v", sv)
	}

	host := meshtest.NewScripted("")
	second := meshtest.ConnectAgent(t, p, agent, meshtest.AgentOptions{Provider: host})
	if second.Attached.RuntimeID == first.RuntimeID {
		t.Fatal("the second pairing kept the first runtime")
	}
	ended := p.WaitTask(run.ID, 30*time.Second, meshtest.StatusIs(mesh.StatusFailed, mesh.StatusCompleted))
	if ended.Status != mesh.StatusFailed || ended.Error == nil || ended.Error.Code != mesh.ReasonSealedForAnotherRuntime || ended.RuntimeID != second.Attached.RuntimeID {
		t.Fatalf("run ended %s by runtime %s with %+v, want failed SEALED_FOR_ANOTHER_RUNTIME by the second runtime", ended.Status, ended.RuntimeID, ended.Error)
	}
	if !strings.Contains(ended.Error.Message, first.RuntimeID) || strings.Contains(ended.Error.Message, value) {
		t.Fatalf("error message %q, want it to name the runtime the variables were sealed for", ended.Error.Message)
	}
	select {
	case env := <-host.Environments:
		t.Fatalf("the host ran the task with the environment %+v", env)
	default:
	}
}
