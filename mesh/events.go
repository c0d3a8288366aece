package mesh

// EventTypePrefix is the reverse-DNS prefix of every CloudEvent type A2A Mesh emits.
const EventTypePrefix = "dev.a2amesh."

// EventKind is the kind of entity an event is about; it is a token of the
// event's bus subject so consumers filter on it.
type EventKind string

// Event kinds.
const (
	KindAgent       EventKind = "agent"
	KindPairingCode EventKind = "pairing_code"
	KindRuntime     EventKind = "runtime"
	KindTaskRun     EventKind = "task_run"
	KindArtifact    EventKind = "artifact"
	KindWebhook     EventKind = "webhook"
)

// Event types. The CloudEvent subject is the id of the entity (agent, runtime,
// task run, artifact, pairing code id).
const (
	EventAgentCreated = EventTypePrefix + "agent.created"
	EventAgentUpdated = EventTypePrefix + "agent.updated"
	// EventAgentBudgetExceeded tells the agent's owner that a budget
	// stopped a run.
	EventAgentBudgetExceeded = EventTypePrefix + "agent.budget_exceeded"

	EventPairingCodeIssued   = EventTypePrefix + "pairing_code.issued"
	EventPairingCodeRedeemed = EventTypePrefix + "pairing_code.redeemed"
	EventPairingCodeExpired  = EventTypePrefix + "pairing_code.expired"

	EventRuntimeAttached = EventTypePrefix + "runtime.attached"
	EventRuntimeOnline   = EventTypePrefix + "runtime.online"
	EventRuntimeOffline  = EventTypePrefix + "runtime.offline"
	EventRuntimeRevoked  = EventTypePrefix + "runtime.revoked"

	EventTaskRunCreated       = EventTypePrefix + "task_run.created"
	EventTaskRunClaimed       = EventTypePrefix + "task_run.claimed"
	EventTaskRunProgress      = EventTypePrefix + "task_run.progress"
	EventTaskRunInputRequired = EventTypePrefix + "task_run.input_required"
	EventTaskRunRequeued      = EventTypePrefix + "task_run.requeued"
	EventTaskRunCompleted     = EventTypePrefix + "task_run.completed"
	EventTaskRunFailed        = EventTypePrefix + "task_run.failed"
	EventTaskRunCanceled      = EventTypePrefix + "task_run.canceled"
	EventTaskRunDelegated     = EventTypePrefix + "task_run.delegated"
	EventTaskRunUsage         = EventTypePrefix + "task_run.usage"
	// EventTaskRunApprovalRequested: the run's host asks permission for a
	// step and the run waits in approval-required.
	EventTaskRunApprovalRequested = EventTypePrefix + "task_run.approval_requested"
	// EventTaskRunApprovalDecided: a step asked for was allowed or denied
	// (by the policy without asking, by a person, or denied at the
	// policy's time limit).
	EventTaskRunApprovalDecided = EventTypePrefix + "task_run.approval_decided"

	EventArtifactCreated = EventTypePrefix + "artifact.created"

	EventWebhookDeliveryFailed = EventTypePrefix + "webhook.delivery_failed"
)

// EventType describes one entry of the event catalog.
type EventType struct {
	Type        string
	Kind        EventKind
	Description string
}

// EventCatalog lists every event type A2A Mesh emits. Docs and schemas are
// checked against it so they cannot drift from the code.
var EventCatalog = []EventType{
	{EventAgentCreated, KindAgent, "An agent account was created. Data: the agent."},
	{EventAgentUpdated, KindAgent, "An agent account was edited. Data: the agent."},
	{EventPairingCodeIssued, KindPairingCode, "A one-time pairing code was issued for an agent. Data: code id, agent id, expiry (never the code)."},
	{EventPairingCodeRedeemed, KindPairingCode, "A pairing code was redeemed by a runtime. Data: code id, agent id, runtime id."},
	{EventPairingCodeExpired, KindPairingCode, "A pairing code expired unused. Data: code id, agent id."},
	{EventRuntimeAttached, KindRuntime, "A runtime attached to an agent with a pairing code. Data: the runtime view."},
	{EventRuntimeOnline, KindRuntime, "A runtime's heartbeats started (or resumed). Data: the runtime view."},
	{EventRuntimeOffline, KindRuntime, "A runtime's heartbeats stopped for longer than its timeout. Data: the runtime view."},
	{EventRuntimeRevoked, KindRuntime, "A runtime's credential was revoked or replaced by a re-pair. Data: the runtime view."},
	{EventTaskRunCreated, KindTaskRun, "A task run was created (pending). Data: the task run."},
	{EventTaskRunClaimed, KindTaskRun, "A runtime claimed a task run (running), or the delegation service took a delegated one. Data: the task run."},
	{EventTaskRunProgress, KindTaskRun, "A runtime reported progress, or the delegate of a delegated run did. Data: the task run with its latest progress."},
	{EventTaskRunInputRequired, KindTaskRun, "The agent ended its turn asking for more input. Data: the task run."},
	{EventTaskRunRequeued, KindTaskRun, "The run went back to pending: a lease expired with attempts left, a claim was released, or the caller answered an input request (the new turn's input is in the run). Data: the task run."},
	{EventTaskRunCompleted, KindTaskRun, "A task run completed. Data: the task run with its output."},
	{EventTaskRunFailed, KindTaskRun, "A task run failed. Data: the task run with its error."},
	{EventTaskRunCanceled, KindTaskRun, "A task run was canceled. Data: the task run."},
	{EventTaskRunDelegated, KindTaskRun, "A running task run was handed to another agent (or a partner platform) by a routing rule; it takes the delegate's answer as its own. Data: the task run with delegated_to."},
	{EventTaskRunUsage, KindTaskRun, "A run's usage changed: its host reported what it spent (with the run's answer), or a run delegated from inside it did and rolled up into usage_total. Data: the task run with usage and usage_total."},
	{EventAgentBudgetExceeded, KindAgent, "A budget of the agent stopped a run: a create refused because the day's budget is spent, or a run canceled because it passed the per-run or per-day budget. Data: the agent id, the limit, what was spent, the run and what was done."},
	{EventTaskRunApprovalRequested, KindTaskRun, "The run's host asked permission for a step (a tool call) that the agent's approval policy leaves to a person: the run is approval-required. Data: the task run with pending_approval (tool, input, expiry)."},
	{EventTaskRunApprovalDecided, KindTaskRun, "A step the host asked permission for was allowed or denied: by the agent's approval policy without asking (decided_by policy), by a person, or at the policy's time limit; the run is running (again). Data: the task run, its decision last in approvals."},
	{EventArtifactCreated, KindArtifact, "An artifact was stored for a task run. Data: the artifact metadata."},
	{EventWebhookDeliveryFailed, KindWebhook, "A webhook (or A2A push notification) delivery gave up after its retry window and was dead-lettered. Data: the delivery, never the URL's secrets."},
}

// LookupEventType finds an event type of the catalog by its full name.
func LookupEventType(name string) (EventType, bool) {
	for _, e := range EventCatalog {
		if e.Type == name {
			return e, true
		}
	}
	return EventType{}, false
}

// TaskRunEventType returns the event type announcing that a run entered status s.
func TaskRunEventType(s Status) string {
	switch s {
	case StatusPending:
		return EventTaskRunCreated
	case StatusRunning:
		return EventTaskRunClaimed
	case StatusInputRequired:
		return EventTaskRunInputRequired
	case StatusCompleted:
		return EventTaskRunCompleted
	case StatusFailed:
		return EventTaskRunFailed
	case StatusCanceled:
		return EventTaskRunCanceled
	case StatusApprovalRequired:
		return EventTaskRunApprovalRequested
	}
	return ""
}
