package mesh

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// TaskRun is one unit of work for one agent: the platform's system of record
// for execution (seed 001 names). Every change to it is a compare-and-set on its
// record's revision.
type TaskRun struct {
	ID               string          `json:"task_run_id"`
	ConversationID   string          `json:"conversation_id"`
	WorkspaceID      string          `json:"workspace_id"`
	TaskType         string          `json:"task_type"`
	Input            json.RawMessage `json:"input"`
	InitiatorAgentID string          `json:"initiator_agent_id,omitempty"`
	TargetAgentID    string          `json:"target_agent_id"`
	// Region is the region that keeps the run: its agent's home region
	// when it was created (docs/architecture.md, "Where each fact lives").
	Region    string `json:"region,omitempty"`
	Status    Status `json:"status"`
	RuntimeID string `json:"runtime_id,omitempty"`
	// ClaimKey is the key of the runtime's request that claimed the run
	// (meshapi.OfferRequest), by which a runtime that lost the answer gets
	// the run back. The runtime's own: not in events.
	ClaimKey string `json:"claim_key,omitempty"`
	// ClaimTakenUp is set once the runtime asked for the run under
	// ClaimKey (it lost the answer): the run is then its, and a give-back
	// under the key is refused. The runtime's own: not in events.
	ClaimTakenUp bool `json:"claim_taken_up,omitempty"`
	// Attempt counts claims: 0 while never claimed, 1 for the first claim.
	Attempt     int             `json:"attempt"`
	MaxAttempts int             `json:"max_attempts"`
	Progress    *Progress       `json:"progress,omitempty"`
	Output      json.RawMessage `json:"output,omitempty"`
	Error       *RunError       `json:"error,omitempty"`
	Artifacts   []ArtifactRef   `json:"artifacts,omitempty"`
	// Usage is what this run's own host reported spending (output.usage
	// of its answer, summed over its turns); nil while none was reported.
	Usage *Usage `json:"usage,omitempty"`
	// UsageTotal is Usage plus the UsageTotal of every run delegated
	// from inside this one (ParentTaskRunID): what the whole tree below
	// it spent. The per-run budget bounds it.
	UsageTotal *Usage `json:"usage_total,omitempty"`
	// RunBudget is what the run may still spend under its agent's
	// per-run budget (the limit less UsageTotal) when it was claimed: in
	// a claim's answer only, for the runtime to hand the host, which may
	// stop itself there (Claude Code's --max-budget-usd). Like
	// Environment it is for the runtime: events and API answers leave it
	// out.
	RunBudget *Limit `json:"run_budget,omitempty"`
	// PendingApproval is the step the run's host asks permission for
	// while the run is approval-required.
	PendingApproval *Approval `json:"pending_approval,omitempty"`
	// Approvals are the steps decided for the run (who, what, when), by
	// the agent's approval policy, a person or the time limit, oldest
	// first: the last MaxRecordedApprovals of them (RecordApproval).
	Approvals []Approval `json:"approvals,omitempty"`
	// ApprovalCount counts every step decided for the run, also those
	// no longer in Approvals.
	ApprovalCount int `json:"approval_count,omitempty"`
	// IdempotencyKey, when set at creation, makes a repeated create return this run.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Deadline bounds the whole run: pending or running past it, it fails with
	// DEADLINE_EXCEEDED.
	Deadline       *time.Time `json:"deadline,omitempty"`
	LeaseExpiresAt *time.Time `json:"lease_expires_at,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	ClaimedAt      *time.Time `json:"claimed_at,omitempty"`
	EndedAt        *time.Time `json:"ended_at,omitempty"`
	// Metadata is free-form caller data (never business instructions, seed 001 §10).
	Metadata map[string]any `json:"metadata,omitempty"`
	// ParentTaskRunID is the run that delegated this one to its agent (see
	// docs/delegation.md): its answer becomes the parent's.
	ParentTaskRunID string `json:"parent_task_run_id,omitempty"`
	// DelegationChain lists the agents that delegated, in order, down to
	// this run (the parent's agent last), so a delegation that would come
	// back to one of them, or go deeper than allowed, is refused.
	DelegationChain []string `json:"delegation_chain,omitempty"`
	// DelegatedTo is set when a routing rule of the target agent matched:
	// the run is not queued for the agent's runtime but delegated, and it
	// takes the delegate's answer (or failure) as its own.
	DelegatedTo *Delegation `json:"delegated_to,omitempty"`
	// Environment is what the caller asked the agent host's process to run
	// with (the envelope protocol's workingDirectory and
	// environmentVariables). It reaches the runtime that claims the run and
	// nobody else: events, API answers and listings leave it out, and it is
	// erased from the record when the run ends.
	Environment *HostEnvironment `json:"environment,omitempty"`
	// TraceParent is the W3C trace context the run continues: its
	// creation's, and in a claim's answer the claim's, so the runtime's
	// work on it joins the trace of the request that created it. Like
	// Environment it is for the runtime: events and API answers leave it
	// out.
	TraceParent string `json:"trace_parent,omitempty"`
	// Revision is the record's store revision; it is filled on read and is the
	// value a compare-and-set is made against.
	Revision uint64 `json:"revision"`
}

// Delegation says where a run was delegated: another agent of the platform
// (AgentID, and TaskRunID once its run exists) or a partner platform
// (PartnerID, and RemoteTaskID once the partner accepted the task).
type Delegation struct {
	// RuleID is the routing rule that matched.
	RuleID string `json:"rule_id"`
	// AgentID is the agent the run was delegated to.
	AgentID string `json:"agent_id,omitempty"`
	// TaskRunID is the delegate's run, once created.
	TaskRunID string `json:"task_run_id,omitempty"`
	// PartnerID and URL name a partner platform (seed 003 routes).
	PartnerID string `json:"partner_id,omitempty"`
	URL       string `json:"url,omitempty"`
	// RemoteTaskID is the partner's task id, once it accepted the task.
	RemoteTaskID string `json:"remote_task_id,omitempty"`
	// RemoteState is the partner task's state as its last callback said.
	RemoteState string `json:"remote_state,omitempty"`
	// DelegatedAt is when the delegate accepted the task.
	DelegatedAt *time.Time `json:"delegated_at,omitempty"`
	// Attempt is the attempt (turn) of the run whose input the delegate
	// has: a run continued after an input request has a later attempt, and
	// its answer is handed on once.
	Attempt int `json:"attempt,omitempty"`
}

// HostEnvironment is what a caller asks the agent host's process to run
// with. Variables never reach the platform's store in the clear: the
// gateway seals them (Sealed) before the run is created, and the task
// queue refuses a run whose Variables are set. Only the runtime that opens
// Sealed fills Variables, in the run-task request it sends its adapter.
type HostEnvironment struct {
	WorkingDirectory string            `json:"working_directory,omitempty"`
	Variables        map[string]string `json:"variables,omitempty"`
	// Sealed holds the caller's variables sealed to the key of the runtime
	// that was the agent's active one when the run was created.
	Sealed *SealedVariables `json:"sealed_variables,omitempty"`
}

// SealedVariables are a caller's environment variables sealed to one
// runtime's public key (curve25519 with XSalsa20-Poly1305, nkeys' xkeys):
// only the holder of that runtime's private key, which never leaves its
// profile, can open them.
type SealedVariables struct {
	// RuntimeID is the runtime whose key Recipient is.
	RuntimeID string `json:"runtime_id"`
	// Recipient is the public key the box is sealed to.
	Recipient string `json:"recipient"`
	// Sender is the public half of the key pair made for this one box.
	Sender string `json:"sender"`
	// Box is the sealed JSON object of the variables, base64 (standard).
	Box string `json:"box"`
}

// forbiddenEnvNames are variables a caller may never set in a host's
// environment: those the host needs to find its tools and files, and
// those that make a shell, the dynamic loader or an interpreter run code
// of the caller's choosing (docs/api.md, "Environment variables").
var forbiddenEnvNames = map[string]bool{
	"PATH": true, "HOME": true, "SHELL": true, "IFS": true, "ENV": true, "BASH_ENV": true,
	"SHELLOPTS": true, "BASHOPTS": true, "PS4": true, "PROMPT_COMMAND": true, "CDPATH": true,
	"NODE_OPTIONS": true, "NODE_PATH": true,
	"PYTHONPATH": true, "PYTHONHOME": true, "PYTHONSTARTUP": true, "PYTHONINSPECT": true,
	"PERL5LIB": true, "PERL5OPT": true, "PERLLIB": true, "RUBYOPT": true, "RUBYLIB": true,
	"JAVA_TOOL_OPTIONS": true, "_JAVA_OPTIONS": true, "JDK_JAVA_OPTIONS": true, "CLASSPATH": true,
	"GCONV_PATH": true, "GIT_EXEC_PATH": true, "GIT_SSH_COMMAND": true,
}

// forbiddenEnvPrefixes forbid whole families: the platform's own A2A_
// variables, and the dynamic loaders' (LD_PRELOAD, LD_LIBRARY_PATH,
// DYLD_INSERT_LIBRARIES…) and bash's exported functions (BASH_FUNC_).
var forbiddenEnvPrefixes = []string{"A2A_", "LD_", "DYLD_", "BASH_FUNC_"}

// ReservedEnvName reports whether a caller may not set an environment
// variable of the host's process (forbiddenEnvNames, forbiddenEnvPrefixes).
// Names are compared in upper case: some systems' environments ignore case.
func ReservedEnvName(name string) bool {
	upper := strings.ToUpper(name)
	if forbiddenEnvNames[upper] {
		return true
	}
	for _, p := range forbiddenEnvPrefixes {
		if strings.HasPrefix(upper, p) {
			return true
		}
	}
	return false
}

// ReservedEnvNames returns the names among vars that ReservedEnvName
// forbids, sorted.
func ReservedEnvNames(vars map[string]string) []string {
	var out []string
	for name := range vars {
		if ReservedEnvName(name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Delegated reports whether the run is delegated rather than queued for its
// agent's runtime.
func (r *TaskRun) Delegated() bool { return r.DelegatedTo != nil }

// HeldBy reports whether runtimeID holds the given attempt of the run
// (attempt 0 means "whatever attempt it holds", for simple HTTP runtimes).
func (r *TaskRun) HeldBy(runtimeID string, attempt int) bool {
	return r.RuntimeID == runtimeID && (attempt == 0 || attempt == r.Attempt)
}

// CheckHeld explains why a runtime of agentID may not act for the run (report
// on it, write its artifacts): the run is another agent's, another runtime or
// attempt holds it, or it is not running.
func (r *TaskRun) CheckHeld(agentID, runtimeID string, attempt int) error {
	if r.TargetAgentID != agentID {
		return Errorf(CodeForbidden, "task run %s belongs to another agent", r.ID)
	}
	if r.Status == StatusRunning && !r.HeldBy(runtimeID, attempt) {
		e := Errorf(CodeStaleAttempt, "task run %s attempt %d is not held by this runtime (current attempt %d)", r.ID, attempt, r.Attempt)
		e.Status = r.Status
		return e
	}
	if r.Status != StatusRunning {
		e := Errorf(CodeInvalidTransition, "task run %s is %s", r.ID, r.Status)
		e.Status = r.Status
		return e
	}
	return nil
}

// Public returns a copy of the run without what only its runtime may see
// (the host environment, the trace context): what events and API answers
// carry.
func (r *TaskRun) Public() *TaskRun {
	cp := *r
	cp.Environment = nil
	cp.TraceParent = ""
	cp.ClaimKey = ""
	cp.ClaimTakenUp = false
	cp.RunBudget = nil
	return &cp
}

// Progress is the latest progress a runtime reported for a run.
type Progress struct {
	Message   string    `json:"message,omitempty"`
	Percent   *float64  `json:"percent,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// RunError says why a run failed or was canceled.
type RunError struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// Error makes a RunError usable as an error where a run's failure is decided
// (e.g. a refused delegation) before it is recorded.
func (e *RunError) Error() string { return e.Code + ": " + e.Message }

// ArtifactRef points at an artifact materialised for a run.
type ArtifactRef struct {
	ArtifactID   string    `json:"artifact_id"`
	Filename     string    `json:"filename"`
	ArtifactType string    `json:"artifact_type,omitempty"`
	Title        string    `json:"title,omitempty"`
	MimeType     string    `json:"mime_type"`
	Size         int64     `json:"size"`
	CreatedAt    time.Time `json:"created_at"`
}

// InputText returns input.text when the input carries one.
func (r *TaskRun) InputText() string { return InputText(r.Input) }

// InputText returns the text field of a task's input (a JSON object such
// as {"text": "..."}), or "" when it has none or is not an object.
func InputText(input json.RawMessage) string {
	var in struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(input, &in)
	return in.Text
}

// Conversation is the context boundary of a group of task runs; it owns exactly
// one workspace (seed 001 §10: context never crosses conversations).
type Conversation struct {
	ID          string         `json:"conversation_id"`
	WorkspaceID string         `json:"workspace_id"`
	CreatedAt   time.Time      `json:"created_at"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

// MaxRunTimeout bounds how far ahead a run's deadline may be set
// (timeout_seconds or deadline at creation): a week. Longer work is a
// conversation of several runs; a bound also keeps a timeout in seconds
// from overflowing a time.Duration into a deadline in the past.
const MaxRunTimeout = 7 * 24 * time.Hour
