package delegation_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestDelegation_KeywordRuleHandsTheTaskToTheTargetAgent: a task for A whose
// text matches A's rule is answered by B, through B's A2A endpoint; both runs
// carry the link; a task that matches no rule stays with A.
func TestDelegation_KeywordRuleHandsTheTaskToTheTargetAgent(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil, "A", "B")
	rule := w.keywordRule("A", "Translate", "B")

	parent := w.task("A", "please translate this")
	done := w.ended(parent.ID)
	if done.Status != mesh.StatusCompleted || text(done) != "B: please translate this" {
		t.Fatalf("delegated run: %s %q %+v", done.Status, text(done), done.Error)
	}
	d := done.DelegatedTo
	if d == nil || d.RuleID != rule.RuleID || d.AgentID != w.id("B") || d.TaskRunID == "" || d.DelegatedAt == nil {
		t.Fatalf("delegated_to: %+v", d)
	}
	if done.RuntimeID != "" {
		t.Fatalf("A's runtime %s held the delegated run", done.RuntimeID)
	}
	child := w.p.GetTask(d.TaskRunID)
	if child.ParentTaskRunID != parent.ID || child.InitiatorAgentID != w.id("A") || child.TargetAgentID != w.id("B") ||
		strings.Join(child.DelegationChain, ",") != w.id("A") || child.Status != mesh.StatusCompleted {
		t.Fatalf("child run: %+v", child)
	}

	plain := w.ended(w.task("A", "hello").ID)
	if plain.Status != mesh.StatusCompleted || text(plain) != "A: hello" || plain.DelegatedTo != nil {
		t.Fatalf("undelegated run: %s %q %+v", plain.Status, text(plain), plain.DelegatedTo)
	}
}

// TestDelegation_RegexSkillAndPriorityPickTheRule: a regular expression
// and a requested skill match too; of several matching rules the highest
// priority wins, and among equals the oldest.
func TestDelegation_RegexSkillAndPriorityPickTheRule(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil, "B", "C", "D")
	w.add("A", []mesh.Skill{{ID: "summarize", Name: "Summarize"}})
	w.rule("A", map[string]any{"match": map[string]any{"regex": `(?i)^invoice\s+#\d+$`}, "priority": 5, "target": map[string]any{"agent_id": w.id("C")}})
	w.rule("A", map[string]any{"match": map[string]any{"skill": "summarize"}, "target": map[string]any{"agent_id": w.id("B")}})
	w.rule("A", map[string]any{"match": map[string]any{"keywords": []string{"urgent"}}, "priority": 1, "target": map[string]any{"agent_id": w.id("B")}})
	w.rule("A", map[string]any{"match": map[string]any{"keywords": []string{"urgent"}}, "priority": 9, "target": map[string]any{"agent_id": w.id("D")}})
	w.rule("A", map[string]any{"match": map[string]any{"keywords": []string{"tie"}}, "priority": 3, "target": map[string]any{"agent_id": w.id("C")}})
	w.rule("A", map[string]any{"match": map[string]any{"keywords": []string{"tie"}}, "priority": 3, "target": map[string]any{"agent_id": w.id("D")}})

	var list meshapi.RoutingRuleList
	w.p.Do(http.MethodGet, "/agent-accounts/"+w.id("A")+"/routing-rules", nil, &list)
	var prios []int
	for _, r := range list.Rules {
		prios = append(prios, r.Priority)
	}
	if fmt.Sprint(prios) != "[9 5 3 3 1 0]" {
		t.Fatalf("rules are listed in the order %v, want highest priority first", prios)
	}

	skilled := w.p.CreateTaskWith(t, map[string]any{"target_agent_id": w.id("A"), "input": map[string]any{"text": "this long report"},
		"metadata": map[string]any{"skill_id": "summarize"}}).Expect(t, http.StatusCreated).Run(t)
	for _, c := range []struct{ id, want string }{
		{w.task("A", "Invoice #42").ID, "C: Invoice #42"},
		{w.task("A", "Invoice #42 please").ID, "A: Invoice #42 please"},
		{skilled.ID, "B: this long report"},
		{w.task("A", "an URGENT matter").ID, "D: an URGENT matter"},
		{w.task("A", "a tie").ID, "C: a tie"},
	} {
		if got := w.ended(c.id); got.Status != mesh.StatusCompleted || text(got) != c.want {
			t.Errorf("answer %q (%s), want %q", text(got), got.Status, c.want)
		}
	}
}

// TestRoutingRules_AreValidatedOnCreation: a rule is refused unless it
// matches on exactly one sound thing and names another existing agent.
func TestRoutingRules_AreValidatedOnCreation(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil, "B")
	a := w.p.CreateAgent("A")
	b := w.id("B")
	path := "/agent-accounts/" + a.ID + "/routing-rules"
	for name, body := range map[string]map[string]any{
		"no match":            {"target": map[string]any{"agent_id": b}},
		"two kinds":           {"match": map[string]any{"keywords": []string{"x"}, "regex": "x"}, "target": map[string]any{"agent_id": b}},
		"empty keywords":      {"match": map[string]any{"keywords": []string{}}, "target": map[string]any{"agent_id": b}},
		"blank keyword":       {"match": map[string]any{"keywords": []string{"ok", "  "}}, "target": map[string]any{"agent_id": b}},
		"regex not RE2":       {"match": map[string]any{"regex": `(?<=x)y`}, "target": map[string]any{"agent_id": b}},
		"regex too large":     {"match": map[string]any{"regex": strings.Repeat("(a|b)", 300)}, "target": map[string]any{"agent_id": b}},
		"regex program size":  {"match": map[string]any{"regex": `\w{1000}`}, "target": map[string]any{"agent_id": b}},
		"unknown skill":       {"match": map[string]any{"skill": "nope"}, "target": map[string]any{"agent_id": b}},
		"no target":           {"match": map[string]any{"keywords": []string{"x"}}},
		"target is itself":    {"match": map[string]any{"keywords": []string{"x"}}, "target": map[string]any{"agent_id": a.ID}},
		"unknown target":      {"match": map[string]any{"keywords": []string{"x"}}, "target": map[string]any{"agent_id": mesh.NewID()}},
		"unknown partner":     {"match": map[string]any{"keywords": []string{"x"}}, "target": map[string]any{"partner_id": mesh.NewID()}},
		"priority not an int": {"match": map[string]any{"keywords": []string{"x"}}, "priority": 1.5, "target": map[string]any{"agent_id": b}},
	} {
		resp := w.p.Send(t, meshtest.Request{Method: http.MethodPost, Path: path, Owner: true, JSON: body})
		if resp.Status != http.StatusBadRequest {
			t.Errorf("%s: HTTP %d, want 400; %s", name, resp.Status, resp.Body)
		}
	}
	var list meshapi.RoutingRuleList
	w.p.Do(http.MethodGet, path, nil, &list)
	if len(list.Rules) != 0 {
		t.Fatalf("refused rules were stored: %+v", list.Rules)
	}
	var r meshapi.RoutingRule
	w.p.Send(t, meshtest.Request{Method: http.MethodPost, Path: path, Owner: true, JSON: map[string]any{
		"name": "to B", "match": map[string]any{"keywords": []string{" spaced "}}, "priority": -2, "target": map[string]any{"agent_id": b}}}).
		Expect(t, http.StatusCreated).Decode(t, &r)
	if r.AgentID != a.ID || r.Name != "to B" || r.Priority != -2 || fmt.Sprint(r.Match.Keywords) != "[spaced]" || r.Target.AgentID != b || !mesh.ValidID(r.RuleID) {
		t.Fatalf("created rule: %+v", r)
	}
	w.p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts/" + mesh.NewID() + "/routing-rules", Owner: true,
		JSON: map[string]any{"match": map[string]any{"keywords": []string{"x"}}, "target": map[string]any{"agent_id": b}}}).ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
	w.p.Send(t, meshtest.Request{Method: http.MethodGet, Path: path}).ExpectError(t, http.StatusUnauthorized, mesh.CodeUnauthorized)
	w.p.Send(t, meshtest.Request{Method: http.MethodDelete, Path: path + "/" + r.RuleID, Owner: true}).Expect(t, http.StatusNoContent)
	w.p.Send(t, meshtest.Request{Method: http.MethodDelete, Path: path + "/" + r.RuleID, Owner: true}).ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
	w.p.Do(http.MethodGet, path, nil, &list)
	if len(list.Rules) != 0 {
		t.Fatalf("deleted rule still listed: %+v", list.Rules)
	}
	// Without the rule the task stays with its agent.
	if run := w.p.CreateTask(a.ID, "spaced out"); run.DelegatedTo != nil {
		t.Fatalf("a deleted rule still delegates: %+v", run.DelegatedTo)
	}
}

// TestDelegation_DelegateFailureFailsTheParentWithItsError: when B fails,
// A's run fails with B's error code, and its message says it came from B.
func TestDelegation_DelegateFailureFailsTheParentWithItsError(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil, "A", "B")
	w.keywordRule("A", "broken", "B")
	parent := w.ended(w.task("A", "fail: broken request").ID)
	child := w.p.GetTask(parent.DelegatedTo.TaskRunID)
	if child.Status != mesh.StatusFailed || child.Error == nil {
		t.Fatalf("child: %s %+v", child.Status, child.Error)
	}
	e := parent.Error
	if parent.Status != mesh.StatusFailed || e == nil || e.Code != child.Error.Code || e.Code != "ADAPTER_REPORTED_FAILURE" {
		t.Fatalf("parent: %s %+v, want failed with the child's code %s", parent.Status, e, child.Error.Code)
	}
	if !strings.Contains(e.Message, `"B"`) || !strings.Contains(e.Message, w.id("B")) || !strings.Contains(e.Message, "scripted failure: fail: broken request") {
		t.Fatalf("parent's error message does not say it came from B: %q", e.Message)
	}
	if e.Details["delegated_task_run_id"] != child.ID || e.Details["delegated_agent_id"] != w.id("B") {
		t.Fatalf("parent's error details: %+v", e.Details)
	}
}

// TestDelegation_LoopIsRefused: A -> B -> A is refused with a clear error
// on the parent, naming the chain.
func TestDelegation_LoopIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil, "A", "B")
	w.keywordRule("A", "ping", "B")
	w.keywordRule("B", "ping", "A")
	parent := w.ended(w.task("A", "ping pong").ID)
	if parent.Status != mesh.StatusFailed || parent.Error == nil || parent.Error.Code != mesh.ReasonDelegationLoop {
		t.Fatalf("parent: %s %+v, want failed DELEGATION_LOOP", parent.Status, parent.Error)
	}
	for _, want := range []string{"loop", `"A"`, `"B"`} {
		if !strings.Contains(parent.Error.Message, want) {
			t.Errorf("loop message %q lacks %s", parent.Error.Message, want)
		}
	}
	child := w.p.GetTask(parent.DelegatedTo.TaskRunID)
	if child.Status != mesh.StatusFailed || child.Error.Code != mesh.ReasonDelegationLoop || child.DelegatedTo == nil || child.DelegatedTo.TaskRunID != "" {
		t.Fatalf("B's run: %s %+v %+v; want refused before delegating back", child.Status, child.Error, child.DelegatedTo)
	}
}

// TestDelegation_DepthLimitIsEnforced: with a limit of 2, A -> B -> C is
// allowed and C's further delegation is refused; the refusal reaches A.
func TestDelegation_DepthLimitIsEnforced(t *testing.T) {
	t.Parallel()
	w := newWorld(t, func(c *platform.Config) { c.DelegationMaxDepth = 2 }, "A", "B", "C", "D")
	w.keywordRule("A", "deep", "B")
	w.keywordRule("B", "deep", "C")
	w.keywordRule("C", "deep", "D")
	root := w.ended(w.task("A", "go deep").ID)
	if root.Status != mesh.StatusFailed || root.Error == nil || root.Error.Code != mesh.ReasonDelegationDepth {
		t.Fatalf("root: %s %+v, want failed DELEGATION_DEPTH_EXCEEDED", root.Status, root.Error)
	}
	if !strings.Contains(root.Error.Message, "limit of 2") {
		t.Errorf("depth message %q does not name the limit", root.Error.Message)
	}
	b := w.p.GetTask(root.DelegatedTo.TaskRunID)
	c := w.p.GetTask(b.DelegatedTo.TaskRunID)
	if len(c.DelegationChain) != 2 || c.Error == nil || c.Error.Code != mesh.ReasonDelegationDepth || c.DelegatedTo.TaskRunID != "" {
		t.Fatalf("C's run: chain %v, %+v, %+v", c.DelegationChain, c.Error, c.DelegatedTo)
	}
}

// TestDelegation_CancelCascadesDownTheChain: canceling the root cancels the
// delegate and the delegate's delegate, whose host is stopped.
func TestDelegation_CancelCascadesDownTheChain(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil, "A", "B", "C")
	w.keywordRule("A", "relay", "B")
	w.keywordRule("B", "relay", "C")
	root := w.task("A", "wait for the relay")
	b := w.child(root.ID)
	c := w.child(b.ID)
	w.p.WaitTask(c.ID, 30*time.Second, func(r mesh.TaskRun) bool { return r.Status == mesh.StatusRunning && r.Progress != nil })
	// The root mirrors its delegate's progress.
	w.p.WaitTask(root.ID, 30*time.Second, func(r mesh.TaskRun) bool {
		return r.Progress != nil && r.Progress.Message == "working on wait for the relay"
	})
	w.p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + root.ID + "/cancel", Owner: true, JSON: map[string]any{"reason": "not needed"}}).Expect(t, http.StatusOK)
	for _, id := range []string{b.ID, c.ID} {
		if got := w.ended(id); got.Status != mesh.StatusCanceled {
			t.Fatalf("run %s after the root was canceled: %s %+v", id, got.Status, got.Error)
		}
	}
	select {
	case stopped := <-w.hosts["C"].Stopped:
		if stopped != c.ID {
			t.Fatalf("C's host stopped %s, want %s", stopped, c.ID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("C's host was never stopped")
	}
	if got := w.p.GetTask(root.ID); got.Status != mesh.StatusCanceled || got.Error.Message != "not needed" {
		t.Fatalf("root: %s %+v", got.Status, got.Error)
	}
}

// TestTrace_ShowsTheWholeDelegationTree: the trace of any run of a chain is
// the tree from its root, with each hop's agent, status, timing and
// idempotency key; the delegation is in the event stream.
func TestTrace_ShowsTheWholeDelegationTree(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil, "A", "B", "C")
	w.keywordRule("A", "chain", "B")
	w.keywordRule("B", "chain", "C")
	events := w.p.StreamEvents(t, url.Values{"agent_id": {w.id("A")}, "type": {"task_run.delegated"}})
	root := w.ended(w.task("A", "a chain of three").ID)
	if root.Status != mesh.StatusCompleted || text(root) != "C: a chain of three" {
		t.Fatalf("root: %s %q", root.Status, text(root))
	}
	ev := events.Until(t, 10*time.Second, meshtest.TypeIs("task_run.delegated", root.ID))
	var data mesh.TaskRun
	if err := json.Unmarshal(ev[len(ev)-1].Data, &data); err != nil || data.DelegatedTo == nil || data.DelegatedTo.AgentID != w.id("B") || data.DelegatedTo.TaskRunID == "" {
		t.Fatalf("delegated event data: %s", ev[len(ev)-1].Data)
	}
	b := w.p.GetTask(root.DelegatedTo.TaskRunID)
	c := w.p.GetTask(b.DelegatedTo.TaskRunID)
	var tree meshapi.TraceNode
	w.p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs/" + c.ID + "/trace", Owner: true}).Expect(t, http.StatusOK).Decode(t, &tree)
	hops := []struct {
		run  mesh.TaskRun
		name string
	}{{root, "A"}, {b, "B"}, {c, "C"}}
	n := &tree
	for i, h := range hops {
		if n.TaskRunID != h.run.ID || n.AgentID != w.id(h.name) || n.AgentName != h.name || n.Status != "completed" ||
			n.CreatedAt == nil || n.ClaimedAt == nil || n.EndedAt == nil || n.DurationMS == nil || *n.DurationMS < 0 || n.IdempotencyKey != h.run.IdempotencyKey {
			t.Fatalf("hop %d: %+v", i, n)
		}
		if i > 0 && !strings.HasPrefix(n.IdempotencyKey, "a2a:") {
			t.Fatalf("hop %d was not created through the A2A endpoint (idempotency key %q)", i, n.IdempotencyKey)
		}
		if i == len(hops)-1 {
			if len(n.Children) != 0 {
				t.Fatalf("leaf has children: %+v", n.Children)
			}
			break
		}
		if len(n.Children) != 1 {
			t.Fatalf("hop %d has %d children", i, len(n.Children))
		}
		n = &n.Children[0]
	}
	w.p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs/" + mesh.NewID() + "/trace", Owner: true}).ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
}

// TestDelegation_SurvivesAPlatformRestart: the platform stops while the
// delegate works; after the restart the delegation service follows the
// delegation again (the parent's lease keeps being renewed) and the parent
// takes the delegate's answer.
func TestDelegation_SurvivesAPlatformRestart(t *testing.T) {
	t.Parallel()
	// Long enough that the graceful stop (which checks every stored event)
	// ends within the lease of the delegate's run.
	const lease = 5 * time.Second
	dir := t.TempDir()
	opts := func(c *platform.Config) { c.DataDir = dir; c.Lease = lease; c.HeartbeatTimeout = time.Minute }
	p := meshtest.StartPlatform(t, opts)
	a, b := p.CreateAgent("A"), p.CreateAgent("B")
	rt := p.OnlineRuntime(t, b.ID)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts/" + a.ID + "/routing-rules", Owner: true,
		JSON: map[string]any{"match": map[string]any{"keywords": []string{"restart"}}, "target": map[string]any{"agent_id": b.ID}}}).Expect(t, http.StatusCreated)
	parent := p.CreateTask(a.ID, "survive a restart")
	parent = p.WaitTask(parent.ID, 30*time.Second, func(r mesh.TaskRun) bool { return r.DelegatedTo != nil && r.DelegatedTo.TaskRunID != "" })
	child := p.PullRun(t, b.ID, rt.RuntimeToken)
	if child.ID != parent.DelegatedTo.TaskRunID {
		t.Fatalf("B pulled %s, the delegate is %s", child.ID, parent.DelegatedTo.TaskRunID)
	}
	p.Heartbeat(t, rt.RuntimeToken)
	p.Stop()

	restarted := time.Now()
	p2 := meshtest.StartPlatform(t, opts)
	// The parent's lease is renewed by the restarted delegation service
	// (B's runtime keeps its own run by heartbeating).
	p2.WaitTask(parent.ID, 30*time.Second, func(r mesh.TaskRun) bool {
		p2.Heartbeat(t, rt.RuntimeToken)
		return r.Status == mesh.StatusRunning && r.LeaseExpiresAt != nil && r.LeaseExpiresAt.After(restarted.Add(lease+500*time.Millisecond))
	})
	p2.Report(t, child.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "answered after the restart"}}).Expect(t, http.StatusOK)
	done := p2.WaitTask(parent.ID, 30*time.Second, meshtest.StatusIs(mesh.StatusCompleted, mesh.StatusFailed, mesh.StatusCanceled))
	if done.Status != mesh.StatusCompleted || text(done) != "answered after the restart" {
		t.Fatalf("parent after the restart: %s %q %+v", done.Status, text(done), done.Error)
	}
}

// TestDelegation_QuestionsOfTheDelegateReachTheCaller: when B asks for
// input, A's run asks it; the caller's answer (through A's A2A endpoint) goes
// on to B's task, and A's run takes B's final answer.
func TestDelegation_QuestionsOfTheDelegateReachTheCaller(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil, "A", "B")
	w.keywordRule("A", "trip", "B")
	parent := w.task("A", "ask: plan a trip")
	asked := w.p.WaitTask(parent.ID, 30*time.Second, meshtest.StatusIs(mesh.StatusInputRequired, mesh.StatusFailed, mesh.StatusCompleted))
	if asked.Status != mesh.StatusInputRequired || text(asked) != "Which city?" {
		t.Fatalf("parent: %s %q %+v", asked.Status, text(asked), asked.Error)
	}
	child := w.p.GetTask(asked.DelegatedTo.TaskRunID)
	if child.Status != mesh.StatusInputRequired {
		t.Fatalf("B's run is %s", child.Status)
	}
	w.p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a/" + w.id("A"), Owner: true, Header: http.Header{"A2a-Version": {"1.0"}},
		JSON: map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": map[string]any{
			"configuration": map[string]any{"returnImmediately": true},
			"message":       map[string]any{"messageId": mesh.NewID(), "role": "ROLE_USER", "taskId": parent.ID, "parts": []any{map[string]any{"text": "Paris"}}}}}}).Expect(t, http.StatusOK)
	done := w.ended(parent.ID)
	if done.Status != mesh.StatusCompleted || text(done) != "B: Paris" || done.DelegatedTo.TaskRunID != child.ID {
		t.Fatalf("parent after the answer: %s %q %+v", done.Status, text(done), done.DelegatedTo)
	}
	if c := w.p.GetTask(child.ID); c.Status != mesh.StatusCompleted || c.Attempt != 2 {
		t.Fatalf("B's run after the answer: %s attempt %d", c.Status, c.Attempt)
	}
}
