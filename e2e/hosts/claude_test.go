// Package hosts_test runs the agent host providers end to end: a platform,
// the real a2a-runtime and a2a-adapter processes, and a fake agent host that
// prints its host's documented output, so that no model is ever called.
package hosts_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// waitStart bounds a process start and a short task on a busy machine.
const waitStart = 30 * time.Second

// A fake Claude Code behind the real adapter and runtime: its progress
// reaches the platform's event stream while the task still runs, its output
// file becomes an artifact, the second task of a conversation resumes the
// first one's session in the same directory, and another conversation
// starts afresh elsewhere. The API key reaches the host and nothing else.
func TestClaudeHost_ProgressArtifactsAndSessionsEndToEnd(t *testing.T) {
	const secret = "sk-ant-e2e-9f8e7d6c5b4a3210"
	p := meshtest.StartPlatform(t)
	runtimeBin := meshtest.BuildCommand(t, "github.com/a2amesh/a2amesh/cmd/a2a-runtime")
	adapterBin := meshtest.BuildCommand(t, "github.com/a2amesh/a2amesh/cmd/a2a-adapter")
	fakeClaude, err := filepath.Abs(filepath.Join("..", "..", "internal", "adapter", "provider", "testdata", "fakehosts", "claude"))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	record, workdir, gate := filepath.Join(dir, "record"), filepath.Join(dir, "work"), filepath.Join(dir, "gate")
	home := t.TempDir()

	addr := meshtest.FreeAddr(t)
	adapter := startProcess(t, "a2a-adapter", []string{
		"HOME=" + home, "FAKE_RECORD=" + record, "FAKE_GATE=" + gate, "FAKE_OUTPUT=# E2E report", "ANTHROPIC_API_KEY=" + secret,
	}, adapterBin, "--provider", "claude", "--host-binary", fakeClaude, "--listen", addr, "--workdir", workdir,
		"--session-persistence", "--state-dir", filepath.Join(dir, "state"), "--kill-grace", "500ms", "--log-level", "debug")
	adapter.waitOutput(t, "a2a-adapter listening on http://"+addr)

	var agent mesh.Agent
	p.Do(http.MethodPost, "/agent-accounts", map[string]any{"name": "claude e2e", "instructions": "You are the e2e release agent."}, &agent)
	pair := exec.Command(runtimeBin, "pair", p.PairingCode(agent.ID), "--api-base", p.APIBase,
		"--local-agent-endpoint", "http://"+addr+"/run-task", "--local-executor-type", "claude_cli")
	pair.Env = append(os.Environ(), "HOME="+home)
	if out, err := pair.CombinedOutput(); err != nil {
		t.Fatalf("a2a-runtime pair: %v\n%s", err, out)
	}
	rt := startProcess(t, "a2a-runtime", []string{"HOME=" + home}, runtimeBin, "start", "--log-level", "debug")
	rt.waitOutput(t, `"message":"runtime started"`)

	// 1. Live progress: seen on the run's event stream while the host still
	// waits on the gate. The stream starts a minute back, so events before it
	// connected are not missed.
	first := p.CreateTask(agent.ID, "Fix the failing tests.")
	stream := p.StreamEvents(t, url.Values{"task_run_id": {first.ID}, "since": {"1m"}})
	evs := stream.Until(t, waitStart, func(ev meshtest.Event) bool {
		return ev.Subject == first.ID && ev.Type == mesh.EventTaskRunProgress && strings.Contains(string(ev.Data), "running: go test ./...")
	})
	if run := p.GetTask(first.ID); run.Status != mesh.StatusRunning {
		t.Fatalf("the run is %s while its host still works; progress was not live", run.Status)
	}
	for _, ev := range evs {
		if ev.Subject == first.ID && ev.Type == mesh.EventTaskRunCompleted {
			t.Fatal("completed before its progress arrived")
		}
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	stream.Until(t, waitStart, meshtest.TypeIs(mesh.EventTaskRunCompleted, first.ID))
	run1 := waitCompleted(t, p, first.ID)
	out1 := outputOf(t, run1)
	if out1.Text != "All tests pass now.\n\nI fixed main.go." || out1.Metadata["total_cost_usd"] != 0.0312 {
		t.Fatalf("output %s", run1.Output)
	}

	// 2. Artifacts: the file the host wrote is stored on the platform.
	if len(run1.Artifacts) != 1 || run1.Artifacts[0].Filename != "report.md" {
		t.Fatalf("artifacts %+v, want report.md", run1.Artifacts)
	}
	content := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/artifacts/" + run1.Artifacts[0].ArtifactID + "/content", Owner: true}).Expect(t, http.StatusOK).Body
	if string(content) != "# E2E report\n" {
		t.Fatalf("artifact content %q", content)
	}

	// 3. The same conversation resumes the host session; another starts anew.
	second := p.CreateTaskWith(t, map[string]any{"target_agent_id": agent.ID, "conversation_id": run1.ConversationID, "input": map[string]any{"text": "And the docs?"}}).
		Expect(t, http.StatusCreated).Run(t)
	run2 := waitCompleted(t, p, second.ID)
	run3 := waitCompleted(t, p, p.CreateTask(agent.ID, "Another matter.").ID)
	if run3.ConversationID == run1.ConversationID {
		t.Fatal("the third task did not start a new conversation")
	}

	calls := recordedCalls(t, record)
	if len(calls) != 3 {
		t.Fatalf("claude was started %d times, want 3", len(calls))
	}
	session := out1.Metadata["session_id"]
	if calls[0].arg("--resume") != "" || calls[0].has("--no-session-persistence") {
		t.Errorf("first task: argv %q, want a new session kept for later", calls[0].argv)
	}
	if got := calls[1].arg("--resume"); got == "" || got != session || outputOf(t, run2).Metadata["session_id"] != session {
		t.Errorf("second task resumed %q, want the first task's session %v", got, session)
	}
	if calls[2].arg("--resume") != "" {
		t.Errorf("another conversation resumed session %q", calls[2].arg("--resume"))
	}
	if calls[0].cwd != calls[1].cwd || calls[0].cwd == calls[2].cwd || !strings.HasPrefix(calls[2].cwd, workdir) {
		t.Errorf("working directories %q %q %q: want one per conversation under %s", calls[0].cwd, calls[1].cwd, calls[2].cwd, workdir)
	}
	if sys := calls[0].arg("--append-system-prompt"); !strings.Contains(sys, "You are the e2e release agent.") {
		t.Errorf("the agent's instructions did not reach claude: %q", sys)
	}
	if calls[1].stdin != "And the docs?" {
		t.Errorf("second task's prompt %q", calls[1].stdin)
	}

	texts := map[string]string{"adapter output": adapter.output(), "runtime output": rt.output(), "platform logs": p.Logs.String()}
	for i, c := range calls {
		if c.env["ANTHROPIC_API_KEY"] != secret {
			t.Errorf("start %d: claude did not get the key in its environment", i+1)
		}
		texts[fmt.Sprintf("claude argv %d", i+1)] = strings.Join(c.argv, " ")
	}
	for _, r := range []mesh.TaskRun{run1, run2, run3} {
		texts["run "+r.ID] = string(r.Output)
	}
	meshtest.AssertNoSecrets(t, []string{secret}, texts)
}

type runOutput struct {
	Text     string         `json:"text"`
	Metadata map[string]any `json:"metadata"`
}

func outputOf(t *testing.T, run mesh.TaskRun) runOutput {
	t.Helper()
	var out runOutput
	if err := json.Unmarshal(run.Output, &out); err != nil {
		t.Fatalf("output of %s: %v: %s", run.ID, err, run.Output)
	}
	return out
}

func waitCompleted(t *testing.T, p *meshtest.Platform, id string) mesh.TaskRun {
	t.Helper()
	run := p.WaitTask(id, waitStart, func(r mesh.TaskRun) bool { return r.Status.Terminal() })
	if run.Status != mesh.StatusCompleted {
		t.Fatalf("run %s ended %s: %+v", id, run.Status, run.Error)
	}
	return run
}

// proc is a program the test started; it is killed when the test ends.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  meshtest.Logs
	done chan struct{}
}

func startProcess(t *testing.T, name string, env []string, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		if t.Failed() {
			t.Logf("---- output of %s ----\n%s", name, p.output())
		}
	})
	return p
}

func (p *proc) output() string { return p.out.String() }

func (p *proc) waitOutput(t *testing.T, text string) {
	t.Helper()
	meshtest.Eventually(t, waitStart, func() bool {
		select {
		case <-p.done:
			t.Fatalf("%s exited before printing %q:\n%s", p.name, text, p.output())
		default:
		}
		return strings.Contains(p.output(), text)
	}, func() string { return p.name + " never printed " + text + ":\n" + p.output() })
}

// hostCall is one start the fake host recorded.
type hostCall struct {
	argv  []string
	env   map[string]string
	cwd   string
	stdin string
}

func (c hostCall) arg(name string) string {
	if i := slices.Index(c.argv, name); i >= 0 && i+1 < len(c.argv) {
		return c.argv[i+1]
	}
	return ""
}

func (c hostCall) has(arg string) bool { return slices.Contains(c.argv, arg) }

func recordedCalls(t *testing.T, dir string) []hostCall {
	t.Helper()
	var calls []hostCall
	for _, pid := range strings.Fields(meshtest.ReadFile(filepath.Join(dir, "calls"))) {
		c := hostCall{env: map[string]string{}}
		c.argv = strings.Split(strings.TrimSuffix(meshtest.ReadFile(filepath.Join(dir, "argv."+pid)), "\x00"), "\x00")
		for _, line := range strings.Split(meshtest.ReadFile(filepath.Join(dir, "env."+pid)), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				c.env[k] = v
			}
		}
		c.cwd = strings.TrimSpace(meshtest.ReadFile(filepath.Join(dir, "cwd."+pid)))
		c.stdin = meshtest.ReadFile(filepath.Join(dir, "stdin."+pid))
		calls = append(calls, c)
	}
	return calls
}
