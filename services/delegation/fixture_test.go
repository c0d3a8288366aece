package delegation_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// world is a platform with online agents whose hosts are scripted (each
// labels its answers with its agent's name).
type world struct {
	t      testing.TB
	p      *meshtest.Platform
	agents map[string]*meshtest.OnlineAgent
	hosts  map[string]*meshtest.Scripted
}

func newWorld(t testing.TB, o func(*platform.Config), names ...string) *world {
	t.Helper()
	w := &world{t: t, p: meshtest.StartPlatform(t, o), agents: map[string]*meshtest.OnlineAgent{}, hosts: map[string]*meshtest.Scripted{}}
	for _, name := range names {
		w.add(name, nil)
	}
	return w
}

// add brings an agent online.
func (w *world) add(name string, skills []mesh.Skill) *meshtest.OnlineAgent {
	w.t.Helper()
	host := meshtest.NewScripted(name)
	a := meshtest.StartOnlineAgent(w.t, w.p, meshtest.AgentOptions{Name: name, Skills: skills, Provider: host})
	w.agents[name], w.hosts[name] = a, host
	return a
}

func (w *world) id(name string) string { return w.agents[name].Agent.ID }

// rule adds a routing rule to an agent and returns it.
func (w *world) rule(agent string, body map[string]any) meshapi.RoutingRule {
	w.t.Helper()
	var r meshapi.RoutingRule
	w.p.Send(w.t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts/" + w.id(agent) + "/routing-rules", Owner: true, JSON: body}).
		Expect(w.t, http.StatusCreated).Decode(w.t, &r)
	return r
}

// keywordRule sends tasks of from whose text holds keyword to to.
func (w *world) keywordRule(from, keyword, to string) meshapi.RoutingRule {
	w.t.Helper()
	return w.rule(from, map[string]any{"match": map[string]any{"keywords": []string{keyword}}, "target": map[string]any{"agent_id": w.id(to)}})
}

// task creates a task for an agent over REST.
func (w *world) task(agent, text string) mesh.TaskRun {
	w.t.Helper()
	return w.p.CreateTask(w.id(agent), text)
}

// ended waits for a run to end.
func (w *world) ended(id string) mesh.TaskRun {
	w.t.Helper()
	return w.p.WaitTask(id, 30*time.Second, meshtest.StatusIs(mesh.StatusCompleted, mesh.StatusFailed, mesh.StatusCanceled))
}

// child waits until a run was delegated and returns its delegate's run.
func (w *world) child(parentID string) mesh.TaskRun {
	w.t.Helper()
	parent := w.p.WaitTask(parentID, 30*time.Second, func(r mesh.TaskRun) bool {
		return r.DelegatedTo != nil && r.DelegatedTo.TaskRunID != "" || r.Status.Terminal()
	})
	if parent.DelegatedTo == nil || parent.DelegatedTo.TaskRunID == "" {
		w.t.Fatalf("run %s ended (%s %+v) without a delegate", parentID, parent.Status, parent.Error)
	}
	return w.p.GetTask(parent.DelegatedTo.TaskRunID)
}

// text is a run's output.text.
func text(run mesh.TaskRun) string {
	var out struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(run.Output, &out)
	return out.Text
}
