package profile

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
)

// Defaults a successful pair writes and the runtime assumes when a field is
// absent (seed 001 §5.1, seed 000 "Official Runtime Default").
const (
	DefaultLocalAgentEndpoint = adapterapi.DefaultEndpoint
	DefaultAdapter            = "http"
	DefaultHeartbeatTimeoutMS = 120000
)

// Profile is one runtime's connection to the platform (seed 001 §5.1). Its
// JSON form is the storage format and includes the runtime token; anything
// shown to people or logs goes through Public, and fmt verbs print Public.
type Profile struct {
	AgentID   string `json:"agent_id"`
	RuntimeID string `json:"runtime_id"`
	// RuntimeToken is the execution credential issued at pairing. It must
	// stay in this file only (seed 000 "Security boundary").
	RuntimeToken string `json:"runtime_token"`
	// SealingKey is the private half (an nkeys curve seed, "SX…") of the
	// key pair made at pairing, whose public half the platform seals
	// callers' environment variables to. Like the token it stays in this
	// file only; empty for a runtime paired before runtimes had one (pair
	// again to take variables).
	SealingKey string `json:"sealing_key,omitempty"`
	// APIBase is the platform REST API base the profile was paired against;
	// pairing tokens are bound to it, so start and status use it (seed 000).
	APIBase string `json:"api_base"`
	// LocalAgentEndpoint is the local adapter; default DefaultLocalAgentEndpoint.
	LocalAgentEndpoint string `json:"local_agent_endpoint"`
	// Adapter is the adapter protocol marker, "http" (seed 001 §6.4).
	Adapter string `json:"adapter"`
	// LastHeartbeatAt is updated by the running runtime.
	LastHeartbeatAt time.Time `json:"last_heartbeat_at,omitzero"`
	// HeartbeatTimeoutMS comes from the pairing response; default 120000.
	HeartbeatTimeoutMS int64         `json:"heartbeat_timeout_ms,omitempty"`
	LocalExecutor      LocalExecutor `json:"local_executor,omitzero"`
	// DeviceName is what the platform shows as "runs on" (seed 001 §6.2).
	DeviceName string              `json:"device_name,omitempty"`
	PairedAt   time.Time           `json:"paired_at,omitzero"`
	Platform   adapterapi.Platform `json:"platform,omitzero"`
	NATS       NATS                `json:"nats,omitzero"`
	// LeaseMS is how long a claimed run stays the runtime's without renewal;
	// the runtime renews at a third of it.
	LeaseMS int64 `json:"lease_ms,omitempty"`
	// Connection is where the running runtime was last connected, as it
	// recorded it (a2a-runtime status shows it).
	Connection Connection `json:"connection,omitzero"`
	// SupervisedAdapter is the adapter `a2a-runtime start` runs and
	// supervises on LocalAgentEndpoint's port, as chosen at pairing; zero
	// when the adapter is run separately.
	SupervisedAdapter SupervisedAdapter `json:"supervised_adapter,omitzero"`

	// extra keeps fields this version does not know, so rewriting a file a
	// newer runtime wrote does not drop them.
	extra map[string]json.RawMessage
}

// LocalExecutor describes the agent host behind the adapter (seed 001 §5.1);
// metadata only, the runtime never starts it.
type LocalExecutor struct {
	// Type is hermes, claude_cli, openclaw, cursor or custom (seed 001 §6.1).
	Type            string `json:"type,omitempty"`
	Ref             string `json:"ref,omitempty"`
	Workspace       string `json:"workspace,omitempty"`
	Cwd             string `json:"cwd,omitempty"`
	InstructionFile string `json:"instruction_file,omitempty"`
}

// SupervisedAdapter is an a2a-adapter the runtime starts, health-checks and
// restarts itself.
type SupervisedAdapter struct {
	// Provider is the adapter's --provider (claude, codex, command…).
	Provider string `json:"provider"`
	// Args follow the adapter's own flags as they are: more flags, and for
	// the command provider "--" and the command.
	Args []string `json:"args,omitempty"`
	// Program is the a2a-adapter to run, an absolute path; empty: the one
	// next to a2a-runtime, else a2a-adapter on PATH.
	Program string `json:"program,omitempty"`
}

// NATS holds the connection details the platform advertises at pairing. Any
// may be empty when the platform offers no direct bus access.
type NATS struct {
	// URL and WSURL reach the servers of Region, the agent's home region.
	URL   string `json:"url,omitempty"`
	WSURL string `json:"ws_url,omitempty"`
	// Region is the agent's home region, as it was at pairing.
	Region string `json:"region,omitempty"`
	// Fallbacks are the other regions' servers, tried in this order when
	// the home region's cannot be reached.
	Fallbacks   []NATSRegion `json:"fallbacks,omitempty"`
	InboxPrefix string       `json:"inbox_prefix,omitempty"`
}

// NATSRegion is where the NATS servers of one region are reached.
type NATSRegion struct {
	Region string `json:"region"`
	URL    string `json:"url,omitempty"`
	WSURL  string `json:"ws_url,omitempty"`
}

// Connection is where a running runtime is connected to the platform.
type Connection struct {
	// Transport is nats or http.
	Transport string `json:"transport"`
	// Server is the URL of the NATS server (without user information), or
	// the API base over HTTP.
	Server string `json:"server,omitempty"`
	// Cluster is the NATS cluster of that server, as the server names it.
	Cluster string `json:"cluster,omitempty"`
	// Region is the platform's region that server is in (a cluster named
	// after one of the regions the runtime knows); empty for any other
	// server, such as a site's leaf node.
	Region string `json:"region,omitempty"`
	// NATSError says why the runtime works over HTTP although the platform
	// offered NATS.
	NATSError string `json:"nats_error,omitempty"`
	// At is when this was recorded.
	At time.Time `json:"at"`
	// PID is the process id of the a2a-runtime start that recorded this;
	// zero once it stopped.
	PID int `json:"pid,omitempty"`
	// APIBase is the platform's API base that start works with (start's
	// --api-base, else the stored one).
	APIBase string `json:"api_base,omitempty"`
	// LocalAdapter is the adapter that start works with: the stored one,
	// unless start's flags changed it (EffectiveAdapter).
	LocalAdapter LocalAdapter `json:"local_adapter,omitzero"`
}

// Name is the profile's key in the file, "{agent_id}/{runtime_id}" (seed 001
// §6.3).
func (p Profile) Name() string {
	return p.AgentID + "/" + p.RuntimeID
}

// WithDefaults returns p with absent fields set to their defaults, so files
// written by hand or by older runtimes behave like freshly paired ones.
func (p Profile) WithDefaults() Profile {
	if p.LocalAgentEndpoint == "" {
		p.LocalAgentEndpoint = DefaultLocalAgentEndpoint
	}
	if p.Adapter == "" {
		p.Adapter = DefaultAdapter
	}
	if p.HeartbeatTimeoutMS == 0 {
		p.HeartbeatTimeoutMS = DefaultHeartbeatTimeoutMS
	}
	return p
}

// HeartbeatTimeout is HeartbeatTimeoutMS as a duration, defaulted.
func (p Profile) HeartbeatTimeout() time.Duration {
	return time.Duration(p.WithDefaults().HeartbeatTimeoutMS) * time.Millisecond
}

// validate checks the identity the profile's name is built from: a slash in
// either id would make the name ambiguous.
func (p Profile) validate() error {
	ids := []struct{ field, value string }{{"agent_id", p.AgentID}, {"runtime_id", p.RuntimeID}}
	for _, id := range ids {
		field, v := id.field, id.value
		if v == "" {
			return fmt.Errorf("%w: %s is empty", ErrInvalidProfile, field)
		}
		if strings.Contains(v, "/") {
			return fmt.Errorf("%w: %s %q contains '/'", ErrInvalidProfile, field, v)
		}
	}
	return nil
}
