package mesh

// Reasons: the codes a failed (or canceled) run's error.code carries, all
// of them, whoever records them: the platform, the runtime, the runtime on
// its adapter's behalf. This is the one table of them; docs/api.md names
// each (a test keeps it so).

// AgentDeletedMessage is the error message of a run canceled because its
// agent was deleted (its error code is ReasonCanceled).
const AgentDeletedMessage = "agent deleted"

// Recorded by the platform itself.
const (
	ReasonRuntimeLost      = "RUNTIME_LOST"
	ReasonDeadlineExceeded = "DEADLINE_EXCEEDED"
	ReasonTaskFailed       = "TASK_FAILED"
	ReasonCanceled         = "CANCELED"
	// ReasonDelegationLoop: a routing rule would delegate the run to an
	// agent already in its delegation chain.
	ReasonDelegationLoop = "DELEGATION_LOOP"
	// ReasonDelegationDepth: the delegation chain would grow past the
	// platform's limit.
	ReasonDelegationDepth = "DELEGATION_DEPTH_EXCEEDED"
	// ReasonDelegationFailed: the delegate could not be given the task (its
	// endpoint refused the call, the partner was unreachable).
	ReasonDelegationFailed = "DELEGATION_FAILED"
	// ReasonSealedForAnotherRuntime: the run's environment variables were
	// sealed to the key of the runtime that was the agent's active one
	// when the run was created, and another runtime claimed it (the agent
	// was paired again meanwhile): only the first could open them. The
	// claiming runtime reports it.
	ReasonSealedForAnotherRuntime = "SEALED_FOR_ANOTHER_RUNTIME"
	// ReasonBudgetExceeded: the run (with its delegated runs) spent more
	// than its agent's per-run budget, or its agent's runs of the day
	// more than the per-day budget; the platform canceled it, or the
	// host stopped itself at what the per-run budget left it and its
	// adapter failed the run with this code (docs/usage.md, "Budgets").
	ReasonBudgetExceeded = "BUDGET_EXCEEDED"
)

// Reported by the runtime about its own part of a run.
const (
	// ReasonArtifactWriteFailed: an artifact the host wrote could not be
	// stored (seed 000 step 6: the run is not completed then).
	ReasonArtifactWriteFailed = "ARTIFACT_WRITE_FAILED"
	// ReasonRuntimeShutdown: the runtime stopped before the run finished.
	ReasonRuntimeShutdown = "RUNTIME_SHUTDOWN"
	// ReasonAdapterFailure: the adapter answered that the host failed,
	// without a code of its own.
	ReasonAdapterFailure = "ADAPTER_REPORTED_FAILURE"
	// ReasonAttachmentUnavailable: an input file could not be fetched from
	// the platform for the adapter.
	ReasonAttachmentUnavailable = "ATTACHMENT_UNAVAILABLE"
	// ReasonRejected: the agent declined the task (its adapter answered
	// output.rejected). Declining ends the run as a failure, so the state
	// machine needs no state of its own for it; the A2A endpoint shows
	// such a run as rejected.
	ReasonRejected = "REJECTED"
)

// Reported by the runtime when the call to its adapter fails.
const (
	ReasonAdapterUnreachable     = "ADAPTER_UNREACHABLE"
	ReasonAdapterConnectionLost  = "ADAPTER_CONNECTION_LOST"
	ReasonAdapterTimeout         = "ADAPTER_TIMEOUT"
	ReasonAdapterHTTPError       = "ADAPTER_HTTP_ERROR"
	ReasonAdapterInvalidJSON     = "ADAPTER_INVALID_JSON"
	ReasonAdapterInvalidResponse = "ADAPTER_INVALID_RESPONSE"
	ReasonAdapterCanceled        = "ADAPTER_CANCELED"
)

// ReasonPartnerTaskFailed: a run delegated to a partner gateway whose task
// failed there.
const ReasonPartnerTaskFailed = "PARTNER_TASK_FAILED"

// Reason is one entry of Reasons.
type Reason struct {
	Code string
	// RecordedBy is who sets it: "platform", "delegation", "runtime" or
	// "adapter call".
	RecordedBy string
}

// Reasons is every code a run's error can carry that the platform or the
// runtime sets; a host's adapter may set codes of its own.
var Reasons = []Reason{
	{ReasonRuntimeLost, "platform"}, {ReasonDeadlineExceeded, "platform"}, {ReasonTaskFailed, "runtime"},
	{ReasonCanceled, "platform"}, {ReasonDelegationLoop, "delegation"}, {ReasonDelegationDepth, "delegation"},
	{ReasonDelegationFailed, "delegation"}, {ReasonPartnerTaskFailed, "delegation"},
	{ReasonSealedForAnotherRuntime, "runtime"}, {ReasonBudgetExceeded, "platform"}, {ReasonArtifactWriteFailed, "runtime"},
	{ReasonRuntimeShutdown, "runtime"}, {ReasonAdapterFailure, "runtime"}, {ReasonAttachmentUnavailable, "runtime"},
	{ReasonRejected, "runtime"},
	{ReasonAdapterUnreachable, "adapter call"}, {ReasonAdapterConnectionLost, "adapter call"},
	{ReasonAdapterTimeout, "adapter call"}, {ReasonAdapterHTTPError, "adapter call"},
	{ReasonAdapterInvalidJSON, "adapter call"}, {ReasonAdapterInvalidResponse, "adapter call"},
	{ReasonAdapterCanceled, "adapter call"},
}
