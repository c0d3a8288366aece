package delegation_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// rawRuntime is a runtime the test drives by hand: it pulls over HTTP and
// speaks its NATS operations with its own credential, as a2a-runtime does.
type rawRuntime struct {
	att meshtest.Attached
	rc  *meshapi.RuntimeClient
}

func connectRuntime(t *testing.T, p *meshtest.Platform, agentID string) *rawRuntime {
	t.Helper()
	att := p.OnlineRuntime(t, agentID)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := bus.Connect(ctx, bus.ConnConfig{URL: p.NATSURL(), Token: att.RuntimeToken, InboxPrefix: att.NATS.InboxPrefix, Name: "test runtime"})
	if err != nil {
		t.Fatalf("runtime connection: %v", err)
	}
	t.Cleanup(conn.NC.Close)
	return &rawRuntime{att: att, rc: meshapi.NewClient(conn.NC).Runtime(att.AgentID, att.RuntimeID)}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func codeOf(err error) mesh.Code {
	var e *mesh.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func allowDelegation(t *testing.T, p *meshtest.Platform, agentID string, policy map[string]any) mesh.Agent {
	t.Helper()
	var a mesh.Agent
	p.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + agentID, Owner: true, JSON: map[string]any{"delegation": policy}}).
		Expect(t, http.StatusOK).Decode(t, &a)
	return a
}

func TestInHostDelegation_AllowedAgentGetsATaskLinkedToTheRun(t *testing.T) {
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = time.Minute; c.HeartbeatTimeout = time.Minute })
	a, b, c := p.CreateAgent("planner"), p.CreateAgent("reviewer"), p.CreateAgent("stranger")
	pub := p.CreateAgent("public helper")
	p.Do(http.MethodPatch, "/agent-accounts/"+pub.ID, map[string]any{"public": true}, nil)
	got := allowDelegation(t, p, a.ID, map[string]any{"agents": []string{b.ID}, "public": true})
	if got.Delegation == nil || !slices.Equal(got.Delegation.Agents, []string{b.ID}) || !got.Delegation.Public {
		t.Fatalf("policy not kept: %+v", got.Delegation)
	}
	ra, rb := connectRuntime(t, p, a.ID), connectRuntime(t, p, b.ID)
	parent := p.CreateTask(a.ID, "plan the release")
	held := p.PullRun(t, a.ID, ra.att.RuntimeToken)
	if held.ID != parent.ID {
		t.Fatalf("pulled %s, want %s", held.ID, parent.ID)
	}
	ctx := ctxT(t)

	list, err := ra.rc.DelegateAgents(ctx, meshapi.DelegateAgentsRequest{TaskRunID: parent.ID})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ag := range list.Agents {
		names = append(names, ag.Name)
		if ag.AgentID == b.ID && !ag.Online {
			t.Errorf("reviewer's runtime is online, listed offline")
		}
		if ag.AgentID == pub.ID && ag.Online {
			t.Errorf("public helper has no runtime, listed online")
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"public helper", "reviewer"}) {
		t.Fatalf("delegable agents = %v, want the allowed one and the public one", names)
	}

	_, err = ra.rc.DelegateSend(ctx, meshapi.DelegateSendRequest{TaskRunID: parent.ID, AgentID: c.ID, Text: "hi", RequestID: "r0"})
	if codeOf(err) != mesh.CodeDelegationNotAllowed || !strings.Contains(err.Error(), `"stranger"`) || !strings.Contains(err.Error(), "delegation policy") {
		t.Fatalf("delegation to an agent not allowed: %v, want DELEGATION_NOT_ALLOWED naming it", err)
	}

	sent, err := ra.rc.DelegateSend(ctx, meshapi.DelegateSendRequest{
		TaskRunID: parent.ID, AgentID: b.ID, Text: "review the diff", RequestID: "r1",
		Files: []meshapi.DelegateFile{{Name: "diff.patch", MimeType: "text/x-diff", Content: []byte("+ new line\n")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	again, err := ra.rc.DelegateSend(ctx, meshapi.DelegateSendRequest{
		TaskRunID: parent.ID, AgentID: b.ID, Text: "review the diff", RequestID: "r1",
		Files: []meshapi.DelegateFile{{Name: "diff.patch", MimeType: "text/x-diff", Content: []byte("+ new line\n")}},
	})
	if err != nil || again.TaskRunID != sent.TaskRunID {
		t.Fatalf("a repeated send (same request id) made %v (%v), want the same task %s", again, err, sent.TaskRunID)
	}
	child := p.GetTask(sent.TaskRunID)
	if child.TargetAgentID != b.ID || child.ParentTaskRunID != parent.ID || child.InitiatorAgentID != a.ID || !slices.Equal(child.DelegationChain, []string{a.ID}) {
		t.Fatalf("child run = target %s parent %s initiator %s chain %v", child.TargetAgentID, child.ParentTaskRunID, child.InitiatorAgentID, child.DelegationChain)
	}

	// The reviewer's runtime does the work; the planner's waits for it.
	claimed := p.PullRun(t, b.ID, rb.att.RuntimeToken)
	if claimed.ID != child.ID {
		t.Fatalf("reviewer pulled %s, want %s", claimed.ID, child.ID)
	}
	var in struct {
		Text        string `json:"text"`
		Attachments []struct {
			Name string `json:"name"`
		} `json:"attachments"`
	}
	_ = json.Unmarshal(claimed.Input, &in)
	if in.Text != "review the diff" || len(in.Attachments) != 1 || in.Attachments[0].Name != "diff.patch" {
		t.Fatalf("delegated input = %s", claimed.Input)
	}
	p.Report(t, child.ID, "complete", rb.att.RuntimeToken, map[string]any{"output": map[string]any{"text": "looks good"}}).Expect(t, http.StatusOK)
	done, err := ra.rc.DelegateGet(ctx, meshapi.DelegateGetRequest{TaskRunID: parent.ID, ChildID: child.ID, Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != mesh.StatusCompleted || !strings.Contains(string(done.Output), "looks good") {
		t.Fatalf("delegated task = %s %s", done.Status, done.Output)
	}

	var trace meshapi.TraceNode
	p.Do(http.MethodGet, "/task-runs/"+child.ID+"/trace", nil, &trace)
	if trace.TaskRunID != parent.ID || len(trace.Children) != 1 || trace.Children[0].TaskRunID != child.ID || trace.Children[0].Status != "completed" {
		t.Fatalf("trace = %+v", trace)
	}
}

func TestInHostDelegation_EndOfTheRunCancelsItsTasksAndEndsItsRight(t *testing.T) {
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = time.Minute; c.HeartbeatTimeout = time.Minute })
	a, b := p.CreateAgent("planner"), p.CreateAgent("worker")
	allowDelegation(t, p, a.ID, map[string]any{"agents": []string{b.ID}})
	ra, rb := connectRuntime(t, p, a.ID), connectRuntime(t, p, b.ID)
	parent := p.CreateTask(a.ID, "long job")
	p.PullRun(t, a.ID, ra.att.RuntimeToken)
	ctx := ctxT(t)
	sent, err := ra.rc.DelegateSend(ctx, meshapi.DelegateSendRequest{TaskRunID: parent.ID, AgentID: b.ID, Text: "run the benchmark", RequestID: "bench"})
	if err != nil {
		t.Fatal(err)
	}
	p.PullRun(t, b.ID, rb.att.RuntimeToken)

	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + parent.ID + "/cancel", Owner: true, JSON: map[string]any{}}).Expect(t, http.StatusOK)
	p.WaitTask(sent.TaskRunID, 20*time.Second, meshtest.StatusIs(mesh.StatusCanceled))

	_, err = ra.rc.DelegateSend(ctx, meshapi.DelegateSendRequest{TaskRunID: parent.ID, AgentID: b.ID, Text: "more", RequestID: "late"})
	if codeOf(err) != mesh.CodeConflict || !strings.Contains(err.Error(), "not running on this runtime") {
		t.Fatalf("send after the run ended: %v, want CONFLICT", err)
	}
	_, err = ra.rc.DelegateGet(ctx, meshapi.DelegateGetRequest{TaskRunID: parent.ID, ChildID: sent.TaskRunID})
	if codeOf(err) != mesh.CodeConflict {
		t.Fatalf("get after the run ended: %v, want CONFLICT", err)
	}
	// The agent's next runtime does not hold it either.
	other := connectRuntime(t, p, a.ID)
	_, err = other.rc.DelegateAgents(ctx, meshapi.DelegateAgentsRequest{TaskRunID: parent.ID})
	if codeOf(err) != mesh.CodeConflict {
		t.Fatalf("a runtime that never held the run: %v, want CONFLICT", err)
	}
}

// TestInHostDelegation_ARunReadsItsDelegatesArtifacts: the run that
// delegated a task fetches the files the delegate wrote, byte for byte,
// through the artifacts service; not an artifact of another task, nor one
// over the size a delegating run may fetch.
func TestInHostDelegation_ARunReadsItsDelegatesArtifacts(t *testing.T) {
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = time.Minute; c.HeartbeatTimeout = time.Minute })
	a, b := p.CreateAgent("planner"), p.CreateAgent("renderer")
	allowDelegation(t, p, a.ID, map[string]any{"agents": []string{b.ID}})
	ra, rb := connectRuntime(t, p, a.ID), connectRuntime(t, p, b.ID)
	parent := p.CreateTask(a.ID, "make the figures")
	p.PullRun(t, a.ID, ra.att.RuntimeToken)
	ctx := ctxT(t)
	sent, err := ra.rc.DelegateSend(ctx, meshapi.DelegateSendRequest{TaskRunID: parent.ID, AgentID: b.ID, Text: "render", RequestID: "render"})
	if err != nil {
		t.Fatal(err)
	}
	p.PullRun(t, b.ID, rb.att.RuntimeToken)
	write := func(rc *meshapi.RuntimeClient, runID, name string, content []byte) *mesh.Artifact {
		t.Helper()
		up, err := rc.OpenArtifact(ctx, meshapi.OpenArtifactRequest{TaskRunID: runID})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := up.Write(content); err != nil {
			t.Fatal(err)
		}
		a, err := up.End(0, mesh.Artifact{Filename: name})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	figure := make([]byte, 1<<20+12345)
	for i := range figure {
		figure[i] = byte(i*13 + i/509)
	}
	fig := write(rb.rc, sent.TaskRunID, "figure.png", figure)
	huge := write(rb.rc, sent.TaskRunID, "huge.bin", make([]byte, 2<<20+1))
	own := write(ra.rc, parent.ID, "notes.txt", []byte("the planner's own"))

	got, err := ra.rc.DelegateArtifact(ctx, meshapi.DelegateArtifactRequest{TaskRunID: parent.ID, ChildID: sent.TaskRunID, ArtifactID: fig.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got.Filename != "figure.png" || got.MimeType != "image/png" || !slices.Equal(got.Content, figure) {
		t.Fatalf("fetched %s (%s), %d bytes, want figure.png, the %d written", got.Filename, got.MimeType, len(got.Content), len(figure))
	}
	for _, c := range []struct {
		name string
		id   string
		code mesh.Code
	}{
		{"an unknown artifact", mesh.NewID(), mesh.CodeNotFound},
		{"an artifact of another task", own.ID, mesh.CodeNotFound},
		{"an artifact over the limit", huge.ID, mesh.CodePayloadTooLarge},
	} {
		_, err := ra.rc.DelegateArtifact(ctx, meshapi.DelegateArtifactRequest{TaskRunID: parent.ID, ChildID: sent.TaskRunID, ArtifactID: c.id})
		if codeOf(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
}

func TestInHostDelegation_LoopAndDepthGuardsApply(t *testing.T) {
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = time.Minute; c.HeartbeatTimeout = time.Minute })
	a, b := p.CreateAgent("alpha"), p.CreateAgent("beta")
	allowDelegation(t, p, a.ID, map[string]any{"agents": []string{b.ID}})
	allowDelegation(t, p, b.ID, map[string]any{"agents": []string{a.ID}})
	ra, rb := connectRuntime(t, p, a.ID), connectRuntime(t, p, b.ID)
	parent := p.CreateTask(a.ID, "start")
	p.PullRun(t, a.ID, ra.att.RuntimeToken)
	ctx := ctxT(t)
	sent, err := ra.rc.DelegateSend(ctx, meshapi.DelegateSendRequest{TaskRunID: parent.ID, AgentID: b.ID, Text: "help", RequestID: "one"})
	if err != nil {
		t.Fatal(err)
	}
	p.PullRun(t, b.ID, rb.att.RuntimeToken)
	_, err = rb.rc.DelegateSend(ctx, meshapi.DelegateSendRequest{TaskRunID: sent.TaskRunID, AgentID: a.ID, Text: "back to you", RequestID: "two"})
	if codeOf(err) != mesh.ReasonDelegationLoop || !strings.Contains(err.Error(), "already in the delegation chain") {
		t.Fatalf("delegation back up the chain: %v, want DELEGATION_LOOP", err)
	}
	_, err = ra.rc.DelegateSend(ctx, meshapi.DelegateSendRequest{TaskRunID: parent.ID, AgentID: a.ID, Text: "myself", RequestID: "three"})
	if codeOf(err) != mesh.CodeDelegationNotAllowed {
		t.Fatalf("delegation to itself: %v, want DELEGATION_NOT_ALLOWED", err)
	}
}

func TestDelegationPolicy_IsValidated(t *testing.T) {
	p := meshtest.StartPlatform(t)
	a := p.CreateAgent("planner")
	someone := mesh.NewID()
	for name, policy := range map[string]map[string]any{
		"not an id": {"agents": []string{"nope"}},
		"itself":    {"agents": []string{a.ID}},
		"twice":     {"agents": []string{someone, someone}},
	} {
		t.Run(name, func(t *testing.T) {
			p.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + a.ID, Owner: true, JSON: map[string]any{"delegation": policy}}).
				ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
		})
	}
	// An empty policy clears it.
	b := p.CreateAgent("b")
	allowDelegation(t, p, a.ID, map[string]any{"agents": []string{b.ID}})
	if got := allowDelegation(t, p, a.ID, map[string]any{}); got.Delegation != nil {
		t.Fatalf("an empty policy left %+v", got.Delegation)
	}
}
