package runtimeengine_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go"
)

// recording answers every task and keeps the instructions each one got.
type recording struct {
	mu   sync.Mutex
	seen map[string]string // input text -> instructions
}

func (*recording) Name() string { return "recording" }

func (r *recording) Run(_ context.Context, t *provider.Task, _ func(provider.Progress)) (*provider.Result, error) {
	r.mu.Lock()
	r.seen[t.Text] = t.Instructions
	r.mu.Unlock()
	return &provider.Result{Output: map[string]any{"text": "ok"}}, nil
}

func (r *recording) instructions(text string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[text]
}

// instructedAgent starts a platform with an agent whose instructions are
// "First.", brings it online with a runtime on transport whose tasks host
// records, and counts the runtime's hellos from then on.
func instructedAgent(t *testing.T, transport string) (*meshtest.Platform, mesh.Agent, *recording, *atomic.Int64) {
	t.Helper()
	p := meshtest.StartPlatform(t)
	var agent mesh.Agent
	p.Do(http.MethodPost, "/agent-accounts", map[string]any{"name": "instructed", "instructions": "First."}, &agent)
	host := &recording{seen: map[string]string{}}
	online := meshtest.ConnectAgent(t, p, agent, meshtest.AgentOptions{Provider: host, Transport: transport})
	var hellos atomic.Int64
	sub, err := p.Conn().NC.Subscribe(bus.RuntimeSubject(agent.ID, online.Attached.RuntimeID, bus.RuntimeOpHello), func(*nats.Msg) { hellos.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := p.Conn().NC.Flush(); err != nil {
		t.Fatal(err)
	}
	return p, agent, host, &hellos
}

// TestInstructions_TheClaimCarriesTheAgentsCurrentOnes: the official
// runtime gives each task the agent's instructions as they are when the
// task is claimed, an edit reaching the next task, and it learns them from
// the claim's answer: it does not ask the platform again before each task.
func TestInstructions_TheClaimCarriesTheAgentsCurrentOnes(t *testing.T) {
	t.Parallel()
	p, agent, host, hellos := instructedAgent(t, runtimeengine.ModeNATS)

	ended := func(r mesh.TaskRun) bool { return r.Status.Terminal() }
	first := p.CreateTask(agent.ID, "one")
	p.WaitTask(first.ID, 20*time.Second, ended)
	p.Do(http.MethodPatch, "/agent-accounts/"+agent.ID, map[string]any{"instructions": "Edited."}, nil)
	second := p.CreateTask(agent.ID, "two")
	p.WaitTask(second.ID, 20*time.Second, ended)

	if got := host.instructions("one"); got != "First." {
		t.Errorf("first task got instructions %q, want %q", got, "First.")
	}
	if got := host.instructions("two"); got != "Edited." {
		t.Errorf("task after the edit got instructions %q, want %q", got, "Edited.")
	}
	if n := hellos.Load(); n != 0 {
		t.Errorf("the runtime asked for its instructions %d times for 2 tasks, want 0: the claim carries them", n)
	}
}

// TestInstructions_OverHTTPTheRuntimeAsksOnlyWhenTheyChanged: a runtime on
// the HTTP transport learns from each pull's answer whether the agent's
// instructions are still those it knows (Mesh-Instructions-Digest): it asks
// for them (hello) when they changed, not before each task.
func TestInstructions_OverHTTPTheRuntimeAsksOnlyWhenTheyChanged(t *testing.T) {
	t.Parallel()
	p, agent, host, hellos := instructedAgent(t, runtimeengine.ModeHTTP)

	ended := func(r mesh.TaskRun) bool { return r.Status.Terminal() }
	for _, text := range []string{"one", "two", "three"} {
		p.WaitTask(p.CreateTask(agent.ID, text).ID, 20*time.Second, ended)
	}
	unchanged := hellos.Load()
	p.Do(http.MethodPatch, "/agent-accounts/"+agent.ID, map[string]any{"instructions": "Edited."}, nil)
	for _, text := range []string{"four", "five"} {
		p.WaitTask(p.CreateTask(agent.ID, text).ID, 20*time.Second, ended)
	}

	for text, want := range map[string]string{"one": "First.", "three": "First.", "four": "Edited.", "five": "Edited."} {
		if got := host.instructions(text); got != want {
			t.Errorf("task %q got instructions %q, want %q", text, got, want)
		}
	}
	if unchanged != 0 {
		t.Errorf("the runtime asked for its instructions %d times for 3 tasks while they did not change, want 0", unchanged)
	}
	if n := hellos.Load() - unchanged; n != 1 {
		t.Errorf("the runtime asked for its instructions %d times for 2 tasks after one edit, want 1", n)
	}
}

// TestInstructions_AnEditAnsweredBeforeATaskIsCreatedReachesIt: a task
// created after the answer to an edit of the agent's instructions runs with
// the edited ones, even when the task queue's view of the agents has not
// caught up with the edit by the time the task is claimed.
func TestInstructions_AnEditAnsweredBeforeATaskIsCreatedReachesIt(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{runtimeengine.ModeNATS, runtimeengine.ModeHTTP} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			p, agent, host, _ := instructedAgent(t, transport)
			resume := p.HoldAgentViews(t)
			p.Do(http.MethodPatch, "/agent-accounts/"+agent.ID, map[string]any{"instructions": "Edited."}, nil)
			run := p.CreateTask(agent.ID, "after the edit")
			p.WaitTask(run.ID, 20*time.Second, func(r mesh.TaskRun) bool { return r.Status != mesh.StatusPending })
			resume()
			p.WaitTask(run.ID, 20*time.Second, func(r mesh.TaskRun) bool { return r.Status.Terminal() })
			if got := host.instructions("after the edit"); got != "Edited." {
				t.Errorf("a task created after the edit was answered got instructions %q, want %q", got, "Edited.")
			}
		})
	}
}
