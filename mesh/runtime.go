package mesh

import "time"

// RuntimeState is the credential state of an attached runtime.
type RuntimeState string

// Runtime credential states.
const (
	RuntimeActive   RuntimeState = "active"
	RuntimeRevoked  RuntimeState = "revoked"
	RuntimeReplaced RuntimeState = "replaced"
)

// Presence says whether a runtime is heartbeating.
type Presence string

// Presence values.
const (
	PresenceOnline  Presence = "online"
	PresenceOffline Presence = "offline"
)

// LocalExecutor describes the agent host behind a runtime (seed 001 §5.1). It is
// display metadata only; the platform never branches on it.
type LocalExecutor struct {
	Type            string `json:"type,omitempty"`
	Ref             string `json:"ref,omitempty"`
	Workspace       string `json:"workspace,omitempty"`
	Cwd             string `json:"cwd,omitempty"`
	InstructionFile string `json:"instruction_file,omitempty"`
}

// Runtime is an attached a2a-runtime: who it is and whether its credential is
// still good. The credential itself is stored elsewhere, only as a hash.
type Runtime struct {
	ID            string        `json:"runtime_id"`
	AgentID       string        `json:"agent_id"`
	DeviceName    string        `json:"device_name,omitempty"`
	LocalExecutor LocalExecutor `json:"local_executor"`
	State         RuntimeState  `json:"state"`
	// SealingKey is the public half of the runtime's sealing key pair
	// (a curve25519 key in nkeys' "X…" form), registered when it paired:
	// a caller's environment variables for the agent are sealed to it.
	// The private half stays in the runtime's profile. Empty for a runtime
	// paired before runtimes had one.
	SealingKey string     `json:"sealing_key,omitempty"`
	AttachedAt time.Time  `json:"attached_at"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
	Revision   uint64     `json:"revision"`
}

// RuntimePresence is the liveness view of a runtime kept by the registry.
type RuntimePresence struct {
	RuntimeID string   `json:"runtime_id"`
	AgentID   string   `json:"agent_id"`
	Status    Presence `json:"status"`
	// LastHeartbeatAt is the heartbeat that last changed the record; the
	// registry keeps the time of every later one apart (bus.BucketHeartbeats).
	LastHeartbeatAt    *time.Time `json:"last_heartbeat_at,omitempty"`
	HeartbeatTimeoutMS int64      `json:"heartbeat_timeout_ms"`
	// AdapterUnreachable is the last heartbeat's word that the runtime's
	// local adapter does not answer (the runtime claims nothing meanwhile).
	AdapterUnreachable bool   `json:"adapter_unreachable,omitempty"`
	Revision           uint64 `json:"revision"`
}

// RuntimeView is what people see about a runtime: seed 001 §6 fields.
type RuntimeView struct {
	RuntimeID       string       `json:"runtime_id"`
	AgentID         string       `json:"agent_id"`
	DeviceName      string       `json:"device_name,omitempty"`
	HostType        string       `json:"host_type,omitempty"`
	HostLabel       string       `json:"host_label,omitempty"`
	State           RuntimeState `json:"state"`
	Status          Presence     `json:"status"`
	LastHeartbeatAt *time.Time   `json:"last_heartbeat_at,omitempty"`
	AttachedAt      time.Time    `json:"attached_at"`
	// NotReady is set on an online runtime whose local adapter does not
	// answer: it is connected but claims no task runs until the adapter is
	// back. The reason says so in words.
	NotReady       bool   `json:"not_ready,omitempty"`
	NotReadyReason string `json:"not_ready_reason,omitempty"`
}

// HostLabel is the display name of a local executor type (seed 001 §6.1).
func HostLabel(hostType string) string {
	switch hostType {
	case "claude_cli", "claude":
		return "Claude Code CLI"
	case "hermes":
		return "Hermes Agent"
	case "openclaw":
		return "OpenClaw"
	case "cursor":
		return "Cursor Agent"
	case "codex":
		return "Codex CLI"
	case "gemini":
		return "Gemini CLI"
	case "", "custom":
		return "Custom Agent"
	}
	return "Custom Agent"
}
