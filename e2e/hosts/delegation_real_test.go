package hosts_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/fakemodel"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// benchmarkAnswer is what the other agent answers to the delegated task.
const benchmarkAnswer = "benchmark: 42 ops/s"

// Claude Code, Codex, Gemini CLI and the OpenClaw gateway: the real host,
// given its run's tools by the adapter, calls the mesh's
// send_task as the model asks (the tool name as the host exposes MCP
// tools), through the runtime's tool server: the other agent, with its own
// runtime and adapter, completes the task, the tool's result reaches the
// model and the host's final answer carries it; the trace tree has the
// other agent's run under the host's.
func testRealDelegation(t *testing.T, name string) {
	t.Parallel()
	l := newRealLab(t, name)
	l.start(t)
	p := l.p
	// The other agent's command reports its own usage on stderr.
	other := startOtherAgent(t, p, "benchmarker", `echo 'usage: {"input_tokens": 900, "output_tokens": 90, "cost_usd": 0.5}' >&2; echo '`+benchmarkAnswer+"'")
	l.model.SetUsage(&usageAnswer)
	p.Do(http.MethodPatch, "/agent-accounts/"+l.agent.ID, map[string]any{"delegation": map[string]any{"agents": []string{other.ID}}}, nil)

	var sent, searched atomic.Bool
	l.model.SetRespond(func(r *fakemodel.Request) fakemodel.Reply {
		if !r.Contains("@@delegate@@") || len(r.Tools()) == 0 {
			return l.respond(r)
		}
		tool, namespace := sendTaskTool(r.Tools()), r.NamespaceOf("send_task")
		if namespace != "" {
			tool = "send_task"
		}
		switch {
		case (r.AfterToolResult() || sent.Load()) && r.Contains(benchmarkAnswer):
			// The OpenClaw gateway gives its model a client tool's result
			// in the conversation's text rather than as a tool message.
			return fakemodel.Reply{Text: "The benchmarker reports " + benchmarkAnswer + "."}
		case tool != "" && !sent.Swap(true):
			return fakemodel.Reply{Text: "Asking the benchmarker.", Tool: &fakemodel.ToolCall{Name: tool, Namespace: namespace,
				Args: map[string]any{"agent_id": other.ID, "text": "run the benchmark", "wait": true}}}
		case tool != "":
			return fakemodel.Reply{Text: "The tool's result lacked the answer."}
		case r.HasTool("tool_search") && !r.Contains(deferred) && !searched.Swap(true):
			// The OpenClaw gateway catalogs a request's client tools
			// behind its Tool Search: a model finds one with its
			// tool_search, then calls it by name with its tool_call.
			return fakemodel.Reply{Text: "Looking for the tool.", Tool: &fakemodel.ToolCall{Name: "tool_search",
				Args: map[string]any{"query": "send a task to another agent"}}}
		case r.HasTool("tool_call") && r.Contains(deferred) && !sent.Swap(true):
			return fakemodel.Reply{Text: "Asking the benchmarker.", Tool: &fakemodel.ToolCall{Name: "tool_call",
				Args: map[string]any{"id": deferred, "args": map[string]any{"agent_id": other.ID, "text": "run the benchmark", "wait": true}}}}
		case r.HasTool("ToolSearch") && r.Contains(deferred) && !r.AfterToolResult():
			// Claude Code defers MCP tools: a model loads one by name
			// with its ToolSearch before calling it.
			return fakemodel.Reply{Text: "Looking for the tool.", Tool: &fakemodel.ToolCall{Name: "ToolSearch",
				Args: map[string]any{"query": "select:" + deferred, "max_results": 5}}}
		}
		return fakemodel.Reply{Text: "The mesh's tools were not offered: " + strings.Join(r.Tools(), ",")}
	})

	run := p.CreateTask(l.agent.ID, "@@delegate@@ Get the benchmark run on the GPU box.")
	done := waitEnd(t, p, run.ID, mesh.StatusCompleted)
	if out := outputOf(t, done); !strings.Contains(out.Text, "The benchmarker reports "+benchmarkAnswer) {
		t.Fatalf("answer %q, want the benchmarker's result in it", out.Text)
	}
	var tree meshapi.TraceNode
	p.Do(http.MethodGet, "/task-runs/"+run.ID+"/trace", nil, &tree)
	if len(tree.Children) != 1 || tree.Children[0].AgentID != other.ID || tree.Children[0].Status != string(mesh.StatusCompleted) {
		t.Fatalf("trace of the run: %+v, want the benchmarker's completed run under it", tree)
	}
	checkUsageRolledUp(t, tree)
}

// deferred is the send_task tool as Claude Code names MCP tools
// (mcp__<server>__<tool>), the name the adapter gives it among an HTTP
// host's client tools too.
const deferred = "mcp__a2a_mesh__send_task"

// sendTaskTool is the name under which the host offers the mesh's
// send_task, or "".
func sendTaskTool(tools []string) string {
	for _, n := range tools {
		if strings.HasSuffix(n, "send_task") {
			return n
		}
	}
	return ""
}

// startOtherAgent starts an agent of the platform with its own adapter
// (the command provider running sh -c script) and runtime.
func startOtherAgent(t *testing.T, p *meshtest.Platform, name, script string) mesh.Agent {
	t.Helper()
	runtimeBin := meshtest.BuildCommand(t, "github.com/a2amesh/a2amesh/cmd/a2a-runtime")
	adapterBin := meshtest.BuildCommand(t, "github.com/a2amesh/a2amesh/cmd/a2a-adapter")
	home, dir := t.TempDir(), t.TempDir()
	addr := meshtest.FreeAddr(t)
	adapter := startProcess(t, name+" a2a-adapter", []string{"HOME=" + home}, adapterBin, "--provider", "command", "--listen", addr,
		"--workdir", filepath.Join(dir, "work"), "--log-level", "debug", "--", "sh", "-c", script)
	adapter.waitOutput(t, "a2a-adapter listening on http://"+addr)
	var agent mesh.Agent
	p.Do(http.MethodPost, "/agent-accounts", map[string]any{"name": name, "description": "runs benchmarks"}, &agent)
	pair := exec.Command(runtimeBin, "pair", p.PairingCode(agent.ID), "--api-base", p.APIBase, "--local-agent-endpoint", "http://"+addr+"/run-task")
	pair.Env = append(os.Environ(), "HOME="+home)
	if out, err := pair.CombinedOutput(); err != nil {
		t.Fatalf("a2a-runtime pair: %v\n%s", err, out)
	}
	rt := startProcess(t, name+" a2a-runtime", []string{"HOME=" + home}, runtimeBin, "start", "--log-level", "debug")
	rt.waitOutput(t, `"message":"runtime started"`)
	return agent
}

func TestRealClaude_DelegatesThroughTheMeshTools(t *testing.T) { testRealDelegation(t, "claude") }

func TestRealCodex_DelegatesThroughTheMeshTools(t *testing.T) { testRealDelegation(t, "codex") }

func TestRealGemini_DelegatesThroughTheMeshTools(t *testing.T) { testRealDelegation(t, "gemini") }

func TestRealOpenClaw_DelegatesThroughTheMeshTools(t *testing.T) { testRealDelegation(t, "openclaw") }
