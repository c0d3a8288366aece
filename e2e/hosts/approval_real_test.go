package hosts_test

import (
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/fakemodel"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// markRE names the file an approval scenario's shell command creates.
var markRE = regexp.MustCompile(`mark-[a-z]+`)

// TestRealClaude_ApprovalsOverTheMesh: Claude Code, not allowed Bash by
// its flags, asks the mesh through its permission prompt tool before each
// shell command the model asks for. The agent's approval policy decides:
// "ask" holds the run in approval-required with the step on it until a
// person runs `a2a-platform tasks approve` (the command runs) or `tasks
// deny` (it does not, and the host goes on without it), or the policy's
// time limit denies it; "allow" and "deny" never ask, and are recorded
// and announced as the policy's decisions. Every run completes.
func TestRealClaude_ApprovalsOverTheMesh(t *testing.T) {
	// Bash is not allowed on the command line: Claude Code asks.
	testRealApprovals(t, "claude", "Bash", nil)
}

// TestRealGemini_ApprovalsOverTheMesh: Gemini CLI under the adapter's
// --approval-mode mesh runs the adapter's approval hook (BeforeTool)
// before each tool call, which asks the mesh: the same story as Claude
// Code's.
func TestRealGemini_ApprovalsOverTheMesh(t *testing.T) {
	testRealApprovals(t, "gemini", "run_shell_command", []string{"--model", "gemini-2.5-flash", "--approval-mode", "mesh"})
}

// testRealApprovals drives a host whose adapter flags are flags through
// the approval scenarios; shell is the name under which the host asks
// about its shell tool.
func testRealApprovals(t *testing.T, name, shell string, flags []string) {
	t.Parallel()
	l := newRealLab(t, name)
	l.host.flags = flags
	l.start(t)
	// The rule that asks about the host's shell command.
	touchRule := shell + "(touch *)"
	p := l.p
	cli := meshtest.BuildCommand(t, "github.com/a2amesh/a2amesh/cmd/a2a-platform")
	marks := t.TempDir()
	l.model.SetRespond(func(r *fakemodel.Request) fakemodel.Reply {
		mark := markRE.FindString(string(r.Body))
		if !r.Contains("@@approval@@") || mark == "" {
			return l.respond(r)
		}
		if r.AfterToolResult() {
			return fakemodel.Reply{Text: "Done with " + mark + "."}
		}
		return fakemodel.Reply{Text: "Creating the file.", Tool: l.host.shell("touch " + filepath.Join(marks, mark))}
	})
	events := p.StreamEvents(t, url.Values{"agent_id": {l.agent.ID}, "since": {"1m"}})
	setPolicy := func(policy map[string]any) {
		p.Do(http.MethodPatch, "/agent-accounts/"+l.agent.ID, map[string]any{"approval_policy": policy}, nil)
	}
	platformCLI := func(args ...string) string {
		cmd := exec.Command(cli, append(args, "--api-base", p.APIBase, "--data-dir", p.DataDir)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("a2a-platform %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	created := func(mark string) bool {
		_, err := os.Stat(filepath.Join(marks, mark))
		return err == nil
	}
	// waitApproval waits for the run to ask, and checks what it asks.
	waitApproval := func(id, mark string) mesh.TaskRun {
		run := p.WaitTask(id, waitHost, func(r mesh.TaskRun) bool { return r.Status == mesh.StatusApprovalRequired || r.Status.Terminal() })
		if run.Status != mesh.StatusApprovalRequired || run.PendingApproval == nil {
			t.Fatalf("run %s is %s, want approval-required: error %+v output %s", id, run.Status, run.Error, run.Output)
		}
		if a := run.PendingApproval; a.Tool != shell || !strings.Contains(string(a.Input), "touch "+filepath.Join(marks, mark)) || a.Rule != touchRule {
			t.Fatalf("pending approval %+v (input %s), want the host's %s touch under rule %s", *a, a.Input, shell, touchRule)
		}
		if created(mark) {
			t.Fatalf("%s exists before the step was decided", mark)
		}
		events.Until(t, waitHost, meshtest.TypeIs(mesh.EventTaskRunApprovalRequested, id))
		return run
	}
	checkDecision := func(run mesh.TaskRun, decision, by string) {
		t.Helper()
		if len(run.Approvals) != 1 || run.Approvals[0].Decision != decision || run.Approvals[0].DecidedBy != by ||
			run.Approvals[0].DecidedAt == nil || run.Approvals[0].Tool != shell || run.PendingApproval != nil {
			t.Fatalf("approvals %+v pending %+v, want one %s by %s", run.Approvals, run.PendingApproval, decision, by)
		}
		events.Until(t, waitHost, meshtest.TypeIs(mesh.EventTaskRunApprovalDecided, run.ID))
	}
	ask := func(timeout int) map[string]any {
		return map[string]any{"rules": []map[string]any{{"match": "Read", "decision": "allow"}, {"match": touchRule, "decision": "ask"}},
			"default": "deny", "timeout_seconds": timeout}
	}

	// Ask, and a person approves: the command runs.
	setPolicy(ask(600))
	run := p.CreateTask(l.agent.ID, "@@approval@@ Create mark-approved.")
	waitApproval(run.ID, "mark-approved")
	platformCLI("tasks", "approve", run.ID)
	done := waitEnd(t, p, run.ID, mesh.StatusCompleted)
	if !created("mark-approved") {
		t.Fatalf("the approved command did not run; output %s", done.Output)
	}
	checkDecision(done, mesh.ApprovalAllow, "owner")

	// Ask, and a person denies: the host goes on without the command.
	run = p.CreateTask(l.agent.ID, "@@approval@@ Create mark-denied.")
	waitApproval(run.ID, "mark-denied")
	platformCLI("tasks", "deny", run.ID, "--reason", "not on a Saturday")
	done = waitEnd(t, p, run.ID, mesh.StatusCompleted)
	if created("mark-denied") {
		t.Fatal("the denied command ran")
	}
	checkDecision(done, mesh.ApprovalDeny, "owner")
	if done.Approvals[0].Reason != "not on a Saturday" {
		t.Fatalf("reason %q", done.Approvals[0].Reason)
	}

	// Ask, and nobody answers: denied at the time limit.
	setPolicy(ask(2))
	run = p.CreateTask(l.agent.ID, "@@approval@@ Create mark-unanswered.")
	waitApproval(run.ID, "mark-unanswered")
	done = waitEnd(t, p, run.ID, mesh.StatusCompleted)
	if created("mark-unanswered") {
		t.Fatal("the unanswered command ran")
	}
	checkDecision(done, mesh.ApprovalDeny, mesh.ApprovalTimeLimit)

	// Allow and deny never ask.
	for _, c := range []struct {
		decision, mark string
		runs           bool
	}{{"allow", "mark-allowed", true}, {"deny", "mark-refused", false}} {
		setPolicy(map[string]any{"rules": []map[string]any{{"match": touchRule, "decision": c.decision}}, "default": "deny"})
		run = p.CreateTask(l.agent.ID, "@@approval@@ Create "+c.mark+".")
		done = waitEnd(t, p, run.ID, mesh.StatusCompleted)
		if created(c.mark) != c.runs {
			t.Fatalf("policy %s: the command ran %v", c.decision, created(c.mark))
		}
		// Recorded and announced all the same, decided by the policy.
		if len(done.Approvals) != 1 || done.Approvals[0].DecidedBy != mesh.ApprovalByPolicy || done.Approvals[0].Decision != c.decision ||
			done.Approvals[0].Rule != touchRule || done.Approvals[0].Tool != shell {
			t.Fatalf("policy %s: approvals %+v, want its one decision by policy", c.decision, done.Approvals)
		}
		evs := events.Until(t, waitHost, meshtest.TypeIs(mesh.EventTaskRunCompleted, run.ID))
		decided := 0
		for _, ev := range evs {
			switch {
			case ev.Subject == run.ID && ev.Type == mesh.EventTaskRunApprovalRequested:
				t.Fatalf("policy %s asked a person", c.decision)
			case ev.Subject == run.ID && ev.Type == mesh.EventTaskRunApprovalDecided:
				decided++
			}
		}
		if decided != 1 {
			t.Fatalf("policy %s: %d approval_decided events, want 1", c.decision, decided)
		}
	}
}

// TestRealCodex_ApprovalsOverTheMesh: Codex under the adapter's
// --approval-mode mesh runs the adapter's approval hook (PreToolUse)
// before each tool call, which asks the mesh: the same story as Claude
// Code's.
func TestRealCodex_ApprovalsOverTheMesh(t *testing.T) {
	// Codex's hooks name its shell tool Bash, as Claude Code does.
	testRealApprovals(t, "codex", "Bash", []string{"--approval-mode", "mesh"})
}
