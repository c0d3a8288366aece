package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// kept is what the delegating host left of its run's tools.
type kept struct {
	URL           string `json:"url"`
	Authorization string `json:"authorization"`
}

// Two agents, each with its own runtime and adapter processes; the
// planner's host is an MCP client of its run's tools. It finds the
// reviewer (its policy allows it), hands it a task and waits: the reviewer
// completes it, the planner's answer carries the result and the trace tree
// has the reviewer's run under the planner's. An agent the policy does not
// name is refused with a clear message; canceling the planner's run cancels
// the reviewer's; a capability is refused once its run has ended, the tool
// server listens only while a run is held, and no capability appears in a
// process output, event or run. (Over HTTP, see
// TestDelegation_HostOfAnHTTPRuntimeDelegatesThroughItsRunsTools.)
func TestDelegation_HostDelegatesThroughItsRunsToolsToAnotherAgentsRuntime(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	hostBin := meshtest.BuildCommand(t, "github.com/a2amesh/a2amesh/e2e/testdata/delegatinghost")

	pidDir := t.TempDir()
	reviewerHost := script(t, `text=$(cat)
case "$text" in
*slow*) echo $$ > '`+pidDir+`'/"$A2A_TASK_RUN_ID"; `+untilFile(filepath.Join(pidDir, "never"))+`;;
*) echo "reviewed: $text";;
esac
`)
	reviewer := l.connectAgent(p, "reviewer", l.startAdapter("command", reviewerHost).Endpoint, "--transport", "nats")
	stranger := p.CreateAgent("stranger")
	keep := t.TempDir()
	plannerAdapter := l.startAdapterEnv([]string{"DELEGATINGHOST_KEEP=" + keep}, "command", hostBin)
	planner := l.connectAgent(p, "planner", plannerAdapter.Endpoint, "--transport", "nats")
	p.Do(http.MethodPatch, "/agent-accounts/"+planner.AgentID, map[string]any{"delegation": map[string]any{"agents": []string{reviewer.AgentID}}}, nil)

	// Delegated, answered, in the tree.
	run := planner.task(reviewer.AgentID + " check the plan")
	done := waitEnded(t, p.Platform, run.ID, mesh.StatusCompleted, waitStart)
	text := outputText(t, done)
	if !strings.Contains(text, "agents: reviewer\n") || !strings.Contains(text, "answer (completed): reviewed: check the plan") {
		t.Fatalf("the planner's answer: %q", text)
	}
	child := onlyChild(t, p.Platform, run.ID)
	if child.AgentID != reviewer.AgentID || child.Status != string(mesh.StatusCompleted) {
		t.Fatalf("the trace's child: %+v", child)
	}
	if got := p.GetTask(child.TaskRunID); got.ParentTaskRunID != run.ID {
		t.Fatalf("the reviewer's run has parent %q, want %s", got.ParentTaskRunID, run.ID)
	}
	first := keptOf(t, l, keep, run.ID)

	// Not allowed: a tool error that says so.
	refused := planner.task(stranger.ID + " hi")
	text = outputText(t, waitEnded(t, p.Platform, refused.ID, mesh.StatusCompleted, waitStart))
	if !strings.Contains(text, "refused: ") || !strings.Contains(text, "DELEGATION_NOT_ALLOWED") || !strings.Contains(text, "stranger") {
		t.Fatalf("a delegation to an agent not allowed: %q", text)
	}
	second := keptOf(t, l, keep, refused.ID)

	// Canceling the parent cancels the child and stops its host.
	long := planner.task(reviewer.AgentID + " slow benchmark")
	var childID string
	meshtest.Eventually(t, waitStart, func() bool {
		n := runTrace(t, p.Platform, long.ID)
		if len(n.Children) == 1 && n.Children[0].Status == string(mesh.StatusRunning) {
			childID = n.Children[0].TaskRunID
			return true
		}
		return false
	}, func() string { return "the delegated task never ran" })
	pids := readPids(t, filepath.Join(pidDir, childID), 1)
	// While the tool server serves this run, the ended runs' capabilities
	// are refused.
	third := keptOf(t, l, keep, long.ID)
	for _, ended := range []kept{first, second} {
		if code := initialize(t, third.URL, ended.Authorization); code != http.StatusUnauthorized {
			t.Fatalf("an ended run's capability: %d, want 401", code)
		}
	}
	cancelTask(t, p.Platform, long.ID)
	waitEnded(t, p.Platform, childID, mesh.StatusCanceled, waitStart)
	waitGone(t, pids, waitStart)
	waitEnded(t, p.Platform, long.ID, mesh.StatusCanceled, waitStart)
	// With no run left the runtime stops listening: nothing answers.
	meshtest.Eventually(t, waitStart, func() bool { return initialize(t, third.URL, third.Authorization) == 0 },
		func() string { return "the tool server still answers after the last run ended" })

	// The capability reached no output, event or run.
	texts := l.outputs()
	for _, id := range []string{run.ID, refused.ID, long.ID, child.TaskRunID, childID} {
		texts["run "+id] = string(rawTask(t, p.Platform, id))
	}
	for _, ev := range events(t, p.Platform, url.Values{}) {
		texts["events"] += string(ev.Data)
	}
	for name, text := range texts {
		if strings.Contains(text, first.capability()) || strings.Contains(text, "a2acap_") {
			t.Errorf("%s carries a run's capability", name)
		}
	}
}

// connectAgent is lab.connect for an agent with its own name.
func (l *lab) connectAgent(p *platform, name, endpoint string, startArgs ...string) *connected {
	l.t.Helper()
	c := &connected{p: p, m: l.newMachine(), agent: p.CreateAgent(name)}
	c.paired = c.m.pair(p.Platform, c.agent.ID, endpoint)
	c.rt = c.m.startRuntime(startArgs...)
	waitOnline(l.t, p.Platform, c.AgentID, c.RuntimeID)
	return c
}

func outputText(t *testing.T, run mesh.TaskRun) string {
	t.Helper()
	var out struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(run.Output, &out); err != nil {
		t.Fatalf("run %s output %s: %v", run.ID, run.Output, err)
	}
	return out.Text
}

func runTrace(t *testing.T, p *meshtest.Platform, runID string) meshapi.TraceNode {
	t.Helper()
	var n meshapi.TraceNode
	p.Do(http.MethodGet, "/task-runs/"+runID+"/trace", nil, &n)
	return n
}

func onlyChild(t *testing.T, p *meshtest.Platform, runID string) meshapi.TraceNode {
	t.Helper()
	n := runTrace(t, p, runID)
	if n.TaskRunID != runID || len(n.Children) != 1 {
		t.Fatalf("trace of %s: %+v, want the run with one child", runID, n)
	}
	return n.Children[0]
}

// keptOf reads what the delegating host kept of a run's tools; its
// capability is masked from now on.
func keptOf(t *testing.T, l *lab, keep, runID string) kept {
	t.Helper()
	var k kept
	if err := json.Unmarshal([]byte(meshtest.ReadFile(filepath.Join(keep, runID+".json"))), &k); err != nil {
		t.Fatalf("the host kept nothing of run %s: %v", runID, err)
	}
	l.secrets.Add(k.capability())
	return k
}

func (k kept) capability() string { return strings.TrimPrefix(k.Authorization, "Bearer ") }

// initialize opens an MCP session at url with authorization and returns
// the HTTP status, 0 when nothing answers.
func initialize(t *testing.T, url, authorization string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"late","version":"1"}}}`))
	req.Header.Set("Authorization", authorization)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A runtime on the HTTP transport gives its hosts the delegation tools as
// one on NATS does: the tool server sends the delegation operations to
// their REST routes, so the planner's host delegates to the reviewer and
// its answer carries the reviewer's, with the reviewer's run under the
// planner's.
func TestDelegation_HostOfAnHTTPRuntimeDelegatesThroughItsRunsTools(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	hostBin := meshtest.BuildCommand(t, "github.com/a2amesh/a2amesh/e2e/testdata/delegatinghost")
	reviewerHost := script(t, `text=$(cat); echo "reviewed: $text"`)
	reviewer := l.connectAgent(p, "reviewer", l.startAdapter("command", reviewerHost).Endpoint, "--transport", "http")
	keep := t.TempDir()
	plannerAdapter := l.startAdapterEnv([]string{"DELEGATINGHOST_KEEP=" + keep}, "command", hostBin)
	planner := l.connectAgent(p, "planner", plannerAdapter.Endpoint, "--transport", "http")
	p.Do(http.MethodPatch, "/agent-accounts/"+planner.AgentID, map[string]any{"delegation": map[string]any{"agents": []string{reviewer.AgentID}}}, nil)

	run := planner.task(reviewer.AgentID + " check the plan")
	done := waitEnded(t, p.Platform, run.ID, mesh.StatusCompleted, waitStart)
	text := outputText(t, done)
	if !strings.Contains(text, "agents: reviewer\n") || !strings.Contains(text, "answer (completed): reviewed: check the plan") {
		t.Fatalf("the planner's answer over HTTP: %q", text)
	}
	child := onlyChild(t, p.Platform, run.ID)
	if child.AgentID != reviewer.AgentID || child.Status != string(mesh.StatusCompleted) {
		t.Fatalf("the trace's child: %+v", child)
	}
	if strings.Contains(planner.rt.output(), "delegation tools off") {
		t.Fatalf("the HTTP runtime still says its hosts get no tools:\n%s", planner.rt.shown(4000))
	}
}
