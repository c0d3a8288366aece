package web_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestWeb_AgentPageShowsWhoItMayDelegateTo: the agent's details name the
// agents its delegation policy allows, by name and linked to their pages,
// and say when the policy allows every public agent or no one.
func TestWeb_AgentPageShowsWhoItMayDelegateTo(t *testing.T) {
	p := meshtest.StartPlatform(t)
	planner, reviewer := p.CreateAgent("Planner"), p.CreateAgent("Reviewer")
	p.Do(http.MethodPatch, "/agent-accounts/"+planner.ID, map[string]any{"delegation": map[string]any{"agents": []string{reviewer.ID}, "public": true}}, nil)

	b := newBrowser(t)
	b.signIn(p)
	b.open(p.APIBase + "/agents/" + planner.ID)
	b.waitText("#delegates a[href='/agents/"+reviewer.ID+"']", "Reviewer")
	b.waitText("#delegates", "every public agent")
	b.checkA11y("the agent page with its delegation policy")
	b.shot("delegation policy")

	b.open(p.APIBase + "/agents/" + reviewer.ID)
	b.waitText("#delegates", "No other agent")
}

// TestWeb_TaskPageShowsTasksDelegatedFromInsideTheWork: a run whose host
// handed another agent a task (nothing on the run's own record says so)
// shows the delegation tree with the other agent's task under it.
func TestWeb_TaskPageShowsTasksDelegatedFromInsideTheWork(t *testing.T) {
	p := meshtest.StartPlatform(t)
	planner, reviewer := p.CreateAgent("Planner"), p.CreateAgent("Reviewer")
	p.Do(http.MethodPatch, "/agent-accounts/"+planner.ID, map[string]any{"delegation": map[string]any{"agents": []string{reviewer.ID}}}, nil)
	att, parent := p.HeldRun(t, planner.ID, "plan the release")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := bus.Connect(ctx, bus.ConnConfig{URL: p.NATSURL(), Token: att.RuntimeToken, InboxPrefix: att.NATS.InboxPrefix, Name: "test runtime"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.NC.Close()
	sent, err := meshapi.NewClient(conn.NC).Runtime(planner.ID, att.RuntimeID).DelegateSend(ctx, meshapi.DelegateSendRequest{
		TaskRunID: parent.ID, AgentID: reviewer.ID, Text: "review the plan", RequestID: "review-1"})
	if err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t)
	b.signIn(p)
	b.open(p.APIBase + "/tasks/" + parent.ID)
	b.waitText("#task-trace", "(this task)")
	b.waitText("#task-trace a[href='/tasks/"+sent.TaskRunID+"']", "Reviewer")
	b.checkA11y("the task page with a task delegated from inside the work")
	b.shot("delegated from inside the work")
}
