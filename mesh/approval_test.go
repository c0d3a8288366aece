package mesh

import (
	"encoding/json"
	"testing"
)

func TestApprovalPolicyDecide(t *testing.T) {
	policy := &ApprovalPolicy{
		Rules: []ApprovalRule{
			{Match: "Bash(git push*)", Decision: ApprovalAsk},
			{Match: "Bash(rm -rf *)", Decision: ApprovalDeny},
			{Match: "Bash(go test*)", Decision: ApprovalAllow},
			{Match: "Read", Decision: ApprovalAllow},
			{Match: "mcp__github__*", Decision: ApprovalAsk},
			{Match: "Write(*.env)", Decision: ApprovalDeny},
			{Match: "Bash", Decision: ApprovalAsk},
		},
		Default: ApprovalDeny,
	}
	for _, c := range []struct {
		tool, input, decision, rule string
	}{
		{"Bash", `{"command":"git push origin main"}`, ApprovalAsk, "Bash(git push*)"},
		{"Bash", `{"command":"rm -rf /"}`, ApprovalDeny, "Bash(rm -rf *)"},
		{"Bash", `{"command":"go test ./..."}`, ApprovalAllow, "Bash(go test*)"},
		// First match wins: a later, broader rule does not.
		{"Bash", `{"command":"ls"}`, ApprovalAsk, "Bash"},
		{"Read", `{"file_path":"/etc/passwd"}`, ApprovalAllow, "Read"},
		{"mcp__github__create_pr", `{}`, ApprovalAsk, "mcp__github__*"},
		{"Write", `{"file_path":"app/.env"}`, ApprovalDeny, "Write(*.env)"},
		{"Write", `{"file_path":"main.go"}`, ApprovalDeny, ""},
		{"WebFetch", `{"url":"https://example.com"}`, ApprovalDeny, ""},
		// A pattern never matches a tool of another name.
		{"BashOutput", `{"command":"git push"}`, ApprovalDeny, ""},
	} {
		d, r := policy.Decide(c.tool, json.RawMessage(c.input))
		if d != c.decision || r != c.rule {
			t.Errorf("%s %s: %s by %q, want %s by %q", c.tool, c.input, d, r, c.decision, c.rule)
		}
	}
	if d, _ := (*ApprovalPolicy)(nil).Decide("Read", nil); d != ApprovalDeny {
		t.Errorf("no policy decides %s, want deny", d)
	}
	if d, _ := (&ApprovalPolicy{Default: ApprovalAsk}).Decide("Read", nil); d != ApprovalAsk {
		t.Errorf("default ask decides %s", d)
	}
}

func TestApprovalPolicyCheck(t *testing.T) {
	for _, c := range []struct {
		policy ApprovalPolicy
		ok     bool
	}{
		{ApprovalPolicy{Rules: []ApprovalRule{{Match: "Bash(git *)", Decision: "ask"}}, Default: "allow", TimeoutSeconds: 60}, true},
		{ApprovalPolicy{Default: "maybe"}, false},
		{ApprovalPolicy{Rules: []ApprovalRule{{Match: "Bash", Decision: "sometimes"}}}, false},
		{ApprovalPolicy{Rules: []ApprovalRule{{Match: "", Decision: "ask"}}}, false},
		{ApprovalPolicy{Rules: []ApprovalRule{{Match: "Bash(git", Decision: "ask"}}}, false},
		{ApprovalPolicy{Rules: []ApprovalRule{{Match: "(git)", Decision: "ask"}}}, false},
		{ApprovalPolicy{TimeoutSeconds: -1}, false},
		{ApprovalPolicy{TimeoutSeconds: 100000}, false},
	} {
		if err := c.policy.Check(); (err == nil) != c.ok {
			t.Errorf("%+v: %v, want ok %v", c.policy, err, c.ok)
		}
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"git push*", "git push --force", true},
		{"git push*", "git pull", false},
		{"*", "", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXcYb", false},
		{"*.env", ".env", true},
		{"exact", "exact", true},
		{"exact", "exactly", false},
		{"ab*ba", "aba", false},
	} {
		if got := Glob(c.pattern, c.s); got != c.want {
			t.Errorf("Glob(%q, %q) = %v", c.pattern, c.s, got)
		}
	}
}
