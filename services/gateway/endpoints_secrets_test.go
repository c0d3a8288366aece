package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/partnerapi"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestEndpoints_SecretsNeverLeak: the working directory of an envelope
// execute-agent reaches the agent's host and nothing else (no log, event, API
// answer of any endpoint, or the run record once the run ended; environment
// variables are refused: envelope/refusals_test.go); a partner's
// shared secret and API key appear only in the answer that registers it.
func TestEndpoints_SecretsNeverLeak(t *testing.T) {
	t.Parallel()
	logs := &meshtest.Logs{}
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Logger = meshtest.NewLogger(logs); c.AllowPrivateWebhooks = true })
	host := meshtest.NewScripted("")
	agent := meshtest.StartOnlineAgent(t, p, meshtest.AgentOptions{Name: "secretive", Provider: host})
	var key meshapi.CreateA2AKeyResponse
	p.Do(http.MethodPost, "/a2a/"+agent.Agent.ID+"/api-keys", nil, &key)
	const cwdSecret = "/home/someone/private-cwd-7b2e"

	env := map[string]any{
		"a2a":     map[string]any{"protocol": "a2a", "version": "1.0", "id": "secret-run", "timestamp": time.Now().UTC().Format(time.RFC3339), "type": "request"},
		"context": map[string]any{"from": "caller", "to": agent.Agent.ID},
		"payload": map[string]any{"method": "execute-agent", "params": map[string]any{
			"input": "wait with secrets", "workingDirectory": cwdSecret}},
	}
	answer := make(chan *meshtest.Response, 1)
	go func() {
		answer <- p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a", Header: http.Header{"X-Api-Key": {key.APIKey}}, JSON: env})
	}()
	got := <-host.Environments
	if got == nil || len(got.Variables) != 0 || got.WorkingDirectory != cwdSecret {
		t.Fatalf("the host got %+v", got)
	}
	var runs meshapi.TaskRunList
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?agent_id=" + agent.Agent.ID, Owner: true}).Expect(t, http.StatusOK).Decode(t, &runs)
	if len(runs.TaskRuns) != 1 {
		t.Fatalf("%d runs", len(runs.TaskRuns))
	}
	id := runs.TaskRuns[0].ID
	texts := map[string]string{}
	read := func(when string) {
		for name, r := range map[string]meshtest.Request{
			"GET /task-runs/{id}":  {Method: http.MethodGet, Path: "/task-runs/" + id, Owner: true},
			"GET /task-runs":       {Method: http.MethodGet, Path: "/task-runs", Owner: true},
			"GET /api/executions":  {Method: http.MethodGet, Path: "/api/executions", Owner: true},
			"GET /a2a/status":      {Method: http.MethodGet, Path: "/a2a/status?taskId=" + id, Header: http.Header{"X-Api-Key": {key.APIKey}}},
			"A2A GetTask":          {Method: http.MethodPost, Path: "/a2a/" + agent.Agent.ID, Header: http.Header{"X-Api-Key": {key.APIKey}, "A2a-Version": {"1.0"}}, JSON: map[string]any{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": map[string]any{"id": id}}},
			"A2A REST task":        {Method: http.MethodGet, Path: "/a2a/" + agent.Agent.ID + "/tasks/" + id, Header: http.Header{"X-Api-Key": {key.APIKey}, "A2a-Version": {"1.0"}}},
			"GET /task-runs/trace": {Method: http.MethodGet, Path: "/task-runs/" + id + "/trace", Owner: true},
		} {
			resp := p.Send(t, r).Expect(t, http.StatusOK)
			texts[when+" "+name] = string(resp.Body)
		}
	}
	read("running:")
	host.Gate <- struct{}{}
	resp := <-answer
	resp.Expect(t, http.StatusOK)
	texts["envelope answer"] = string(resp.Body)
	p.WaitTask(id, 30*time.Second, meshtest.StatusIs(mesh.StatusCompleted))
	read("ended:")

	// The record itself forgets the environment once the run ended.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := p.Conn().JS.KeyValue(ctx, bus.BucketRuns)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := kv.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	texts["the ended run's record"] = string(entry.Value())

	// A partner: its secret and API key.
	const partnerKey = "partner-api-key-never-shown-2c8a"
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"taskId": "remote-secret", "state": "submitted"})
	}))
	defer recv.Close()
	var partner meshapi.CreatePartnerResponse
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a/partners", Owner: true, JSON: map[string]any{"name": "p", "url": recv.URL, "api_key": partnerKey}}).
		Expect(t, http.StatusCreated).Decode(t, &partner)
	texts["GET /a2a/partners"] = string(p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/a2a/partners", Owner: true}).Expect(t, http.StatusOK).Body)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts/" + agent.Agent.ID + "/routing-rules", Owner: true,
		JSON: map[string]any{"match": map[string]any{"keywords": []string{"outside"}}, "target": map[string]any{"partner_id": partner.PartnerID}}}).Expect(t, http.StatusCreated)
	out := p.CreateTask(agent.Agent.ID, "go outside")
	out = p.WaitTask(out.ID, 30*time.Second, func(r mesh.TaskRun) bool { return r.DelegatedTo != nil && r.DelegatedTo.RemoteTaskID != "" })
	body, _ := json.Marshal(map[string]any{"taskId": "remote-secret", "state": "working"})
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	cb := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a/webhook", Body: body, ContentType: "application/json", Header: http.Header{
		partnerapi.HeaderPartnerID: {partner.PartnerID}, partnerapi.HeaderTimestamp: {ts}, partnerapi.HeaderSignature: {partnerapi.Sign(partner.Secret, ts, body)}}}).Expect(t, http.StatusOK)
	texts["callback answer"] = string(cb.Body)
	texts["task delegated out"] = meshtest.JSON(p.GetTask(out.ID))
	texts["stored events"] = p.StoredEvents(t)
	texts["logs"] = logs.String()
	meshtest.AssertNoSecrets(t, []string{cwdSecret, partner.Secret, partnerKey, key.APIKey}, texts)
}
