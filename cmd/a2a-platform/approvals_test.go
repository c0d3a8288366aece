package main_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/mesh"
)

// TestCLI_AgentsPolicySetsAndClearsAnAgentsApprovalPolicy: `agents policy`
// sets the rules in the order given, the default and the time limit;
// refuses a command line without any (exit 2), a rule without its
// decision (exit 2) and a policy the platform refuses (exit 1, its
// message); --clear removes it. `tasks approve` of a run that waits for
// nothing is refused with the platform's message.
func TestCLI_AgentsPolicySetsAndClearsAnAgentsApprovalPolicy(t *testing.T) {
	t.Parallel()
	a := startAdmin(t)
	agent := a.p.CreateAgent("careful")
	r := a.run("agents", "policy", agent.ID, "--rule", "Bash(git push*)=ask", "--rule", "Read=allow", "--default", "deny", "--timeout", "5m", "-o", "json")
	var got mesh.Agent
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &got) != nil || got.ApprovalPolicy == nil {
		t.Fatalf("agents policy: %s", r)
	}
	if p := got.ApprovalPolicy; len(p.Rules) != 2 || p.Rules[0] != (mesh.ApprovalRule{Match: "Bash(git push*)", Decision: "ask"}) ||
		p.Rules[1] != (mesh.ApprovalRule{Match: "Read", Decision: "allow"}) || p.Default != "deny" || p.TimeoutSeconds != 300 {
		t.Fatalf("policy %+v", *p)
	}
	if r := a.run("agents", "policy", agent.ID); r.code != 2 || !strings.Contains(r.stderr, "--clear") {
		t.Fatalf("agents policy without a rule: %s", r)
	}
	if r := a.run("agents", "policy", agent.ID, "--rule", "Bash"); r.code != 2 || !strings.Contains(r.stderr, "MATCH=DECISION") {
		t.Fatalf("agents policy with a rule without its decision: %s", r)
	}
	if r := a.run("agents", "policy", agent.ID, "--rule", "Bash=perhaps"); r.code != 1 || !strings.Contains(r.stderr, "allow, deny or ask") {
		t.Fatalf("agents policy with a bad decision: %s", r)
	}
	r = a.run("agents", "policy", agent.ID, "--clear", "-o", "json")
	got = mesh.Agent{}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &got) != nil || got.ApprovalPolicy != nil {
		t.Fatalf("agents policy --clear: %s", r)
	}

	run := a.p.CreateTask(agent.ID, "nothing to approve")
	if r := a.run("tasks", "approve", run.ID); r.code != 1 || !strings.Contains(r.stderr, "waits for approval") {
		t.Fatalf("tasks approve of a pending run: %s", r)
	}
}
