package mesh

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Approval decisions: what a policy rule says of a step, and what a step
// asked about becomes.
const (
	ApprovalAllow = "allow"
	ApprovalDeny  = "deny"
	ApprovalAsk   = "ask"
)

// DefaultApprovalTimeout is how long an "ask" waits for a person when the
// policy sets no time limit; MaxApprovalTimeout bounds the limit a policy sets.
const (
	DefaultApprovalTimeout = 10 * time.Minute
	MaxApprovalTimeout     = 24 * time.Hour
)

// ApprovalPolicy decides what an agent's hosts may do: the first rule that
// matches a step decides it, else Default (deny when empty). An "ask" waits
// for a person for TimeoutSeconds (default DefaultApprovalTimeout) and is a
// deny when nobody answered by then.
type ApprovalPolicy struct {
	Rules          []ApprovalRule `json:"rules,omitempty"`
	Default        string         `json:"default,omitempty"`
	TimeoutSeconds int            `json:"timeout_seconds,omitempty"`
}

// ApprovalRule is one rule of a policy. Match is a tool name, optionally
// with a pattern of its input in parentheses: "Read", "Bash(git push*)",
// "mcp__github__*". In both, * stands for any text (also empty); the
// pattern is matched against the input's command, file_path, path or url
// (the first the input has), or else its JSON.
type ApprovalRule struct {
	Match    string `json:"match"`
	Decision string `json:"decision"`
}

// Approval is one step a host asked permission for, and its decision once
// made.
type Approval struct {
	// ID is the host's id of the tool call (its tool_use_id).
	ID    string          `json:"approval_id"`
	Tool  string          `json:"tool"`
	Input json.RawMessage `json:"input,omitempty"`
	// Rule is the policy rule that asked ("" for the policy's default).
	Rule        string    `json:"rule,omitempty"`
	RequestedAt time.Time `json:"requested_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	// Decision is allow or deny once decided; Reason says why (a person's
	// reason, or the time limit).
	Decision  string     `json:"decision,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	DecidedBy string     `json:"decided_by,omitempty"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
}

// ApprovalTimeLimit is the decider recorded when nobody answered in time.
const ApprovalTimeLimit = "time-limit"

// ApprovalByPolicy is the decider recorded for a step the agent's approval
// policy allowed or denied without asking anyone.
const ApprovalByPolicy = "policy"

// MaxRecordedApprovals bounds a run's Approvals: a host that makes
// thousands of allowed calls keeps its record small. The events carry
// every decision; ApprovalCount counts them.
const MaxRecordedApprovals = 100

// RecordApproval appends a decided step to the run's Approvals, dropping
// the oldest beyond MaxRecordedApprovals, and counts it.
func (r *TaskRun) RecordApproval(a Approval) {
	if r.ApprovalCount < len(r.Approvals) {
		// Recorded before the count was kept.
		r.ApprovalCount = len(r.Approvals)
	}
	// A new array: the run read may share its own with a cached copy.
	r.Approvals = append(slices.Clip(r.Approvals), a)
	if over := len(r.Approvals) - MaxRecordedApprovals; over > 0 {
		r.Approvals = append(r.Approvals[:0:0], r.Approvals[over:]...)
	}
	r.ApprovalCount++
}

// Check explains what is wrong with a policy, or returns nil.
func (p *ApprovalPolicy) Check() error {
	if p == nil {
		return nil
	}
	if p.Default != "" && !validDecision(p.Default) {
		return Errorf(CodeInvalidRequest, "approval_policy.default must be allow, deny or ask, not %q", p.Default)
	}
	if p.TimeoutSeconds < 0 || time.Duration(p.TimeoutSeconds)*time.Second > MaxApprovalTimeout {
		return Errorf(CodeInvalidRequest, "approval_policy.timeout_seconds must be between 0 and %d", int(MaxApprovalTimeout/time.Second))
	}
	if len(p.Rules) > 200 {
		return Errorf(CodeInvalidRequest, "approval_policy has more than 200 rules")
	}
	for i, r := range p.Rules {
		if !validDecision(r.Decision) {
			return Errorf(CodeInvalidRequest, "approval_policy.rules[%d].decision must be allow, deny or ask, not %q", i, r.Decision)
		}
		if _, _, err := parseRule(r.Match); err != nil {
			return Errorf(CodeInvalidRequest, "approval_policy.rules[%d].match: %v", i, err)
		}
	}
	return nil
}

func validDecision(d string) bool {
	return d == ApprovalAllow || d == ApprovalDeny || d == ApprovalAsk
}

// Timeout is how long an "ask" of the policy waits for a person.
func (p *ApprovalPolicy) Timeout() time.Duration {
	if p == nil || p.TimeoutSeconds == 0 {
		return DefaultApprovalTimeout
	}
	return time.Duration(p.TimeoutSeconds) * time.Second
}

// Decide returns what the policy says of a host's step (tool and its
// input): the decision of the first rule that matches, and that rule's
// Match, or the default ("deny" for a nil policy or no default) and "".
func (p *ApprovalPolicy) Decide(tool string, input json.RawMessage) (decision, rule string) {
	if p == nil {
		return ApprovalDeny, ""
	}
	for _, r := range p.Rules {
		if ruleMatches(r.Match, tool, input) {
			return r.Decision, r.Match
		}
	}
	if p.Default == "" {
		return ApprovalDeny, ""
	}
	return p.Default, ""
}

// parseRule splits "Tool(pattern)" into its tool and pattern; hasPattern
// is false for a bare tool name.
func parseRule(match string) (tool, pattern string, err error) {
	match = strings.TrimSpace(match)
	if match == "" {
		return "", "", fmt.Errorf("empty")
	}
	open := strings.IndexByte(match, '(')
	if open < 0 {
		if strings.ContainsRune(match, ')') {
			return "", "", fmt.Errorf("%q has a ) without (", match)
		}
		return match, "", nil
	}
	if !strings.HasSuffix(match, ")") || open == 0 {
		return "", "", fmt.Errorf("%q: write Tool or Tool(pattern)", match)
	}
	return match[:open], match[open+1 : len(match)-1], nil
}

func ruleMatches(match, tool string, input json.RawMessage) bool {
	ruleTool, pattern, err := parseRule(match)
	if err != nil || !Glob(ruleTool, tool) {
		return false
	}
	if !strings.Contains(match, "(") {
		return true
	}
	return Glob(pattern, approvalSubject(input))
}

// approvalSubject is the text of a step's input a rule's pattern is
// matched against.
func approvalSubject(input json.RawMessage) string {
	var fields map[string]any
	if json.Unmarshal(input, &fields) == nil {
		for _, k := range []string{"command", "file_path", "path", "url"} {
			if v, ok := fields[k].(string); ok {
				return v
			}
		}
	}
	return string(input)
}

// Glob reports whether s matches pattern, in which * stands for any text.
func Glob(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return strings.HasSuffix(s, last)
}

// DecidedByPolicyAlone reports whether the event of type eventType about a
// run (its data, the run) announces a step the agent's policy decided
// without asking: the last of the run's approvals, decided by the policy.
// Such a step leaves the task as it was, so what tells a task's states (an
// A2A stream, an A2A push) leaves it out.
func DecidedByPolicyAlone(eventType string, data []byte) bool {
	if eventType != EventTaskRunApprovalDecided {
		return false
	}
	var run struct {
		Approvals []struct {
			DecidedBy string `json:"decided_by"`
		} `json:"approvals"`
	}
	if json.Unmarshal(data, &run) != nil || len(run.Approvals) == 0 {
		return false
	}
	return run.Approvals[len(run.Approvals)-1].DecidedBy == ApprovalByPolicy
}
