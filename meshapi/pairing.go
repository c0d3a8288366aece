package meshapi

import (
	"context"
	"net/http"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
)

// Pairing operations (service "credentials").
const (
	OpPairingIssue        = "issue"
	OpPairingAttach       = "attach"
	OpPairingRevoke       = "revoke"
	OpPairingAuthenticate = "authenticate"
	// OpPairingSealingKey answers the public sealing key of an agent's
	// active runtime (the gateway seals a caller's variables to it).
	OpPairingSealingKey = "sealing_key"
)

// IssuePairingCodeRequest asks for a one-time pairing code for an agent.
type IssuePairingCodeRequest struct {
	AgentID string `json:"agent_id"`
	// TTL overrides the platform's default code lifetime when shorter.
	TTL time.Duration `json:"ttl,omitempty"`
}

// PairingCode is a freshly issued code. The code is shown to the person once;
// the platform keeps only its hash.
type PairingCode struct {
	PairingToken string    `json:"pairing_token"`
	CodeID       string    `json:"code_id"`
	AgentID      string    `json:"agent_id"`
	ExpiresAt    time.Time `json:"expires_at"`
}

// AttachRequest redeems a pairing code (seed 001 §4.1).
type AttachRequest struct {
	PairingToken  string             `json:"pairing_token"`
	DeviceName    string             `json:"device_name,omitempty"`
	LocalExecutor mesh.LocalExecutor `json:"local_executor"`
	// RuntimeID re-attaches an existing runtime of the same agent (a re-pair
	// that keeps the runtime's identity); unknown or foreign ids are ignored.
	RuntimeID string `json:"runtime_id,omitempty"`
	// SealingKey is the public half of the key pair the runtime made for
	// this pairing (a curve25519 key, "X…"): callers' environment
	// variables for the agent are sealed to it. Optional: a runtime
	// without one cannot be given variables.
	SealingKey string `json:"sealing_key,omitempty"`
}

// SealingKeyRequest asks for the sealing key of an agent's active runtime.
type SealingKeyRequest struct {
	AgentID string `json:"agent_id"`
}

// SealingKey is the public sealing key of an agent's active runtime.
type SealingKey struct {
	RuntimeID  string `json:"runtime_id"`
	SealingKey string `json:"sealing_key"`
}

// NATSConnection tells a runtime how to reach the bus directly.
type NATSConnection struct {
	// URL and WSURL reach the servers of Region, the agent's home region.
	URL   string `json:"url,omitempty"`
	WSURL string `json:"ws_url,omitempty"`
	// Region is the agent's home region, the one URL and WSURL reach.
	Region string `json:"region,omitempty"`
	// Fallbacks are the other regions' servers, in the order a runtime
	// tries them when its home region's cannot be reached: slower (its
	// work crosses to the home region) but working.
	Fallbacks   []NATSRegion `json:"fallbacks,omitempty"`
	InboxPrefix string       `json:"inbox_prefix"`
}

// NATSRegion is where a runtime reaches the NATS servers of one region.
type NATSRegion struct {
	Region string `json:"region"`
	URL    string `json:"url,omitempty"`
	WSURL  string `json:"ws_url,omitempty"`
}

// DefaultPlatformName is the platform name passed on to adapters unless the
// platform is configured with another.
const DefaultPlatformName = "A2A Mesh"

// PlatformInfo is the public origin identifier passed on to adapters (seed 000).
type PlatformInfo struct {
	Name   string `json:"name"`
	Origin string `json:"origin"`
}

// AttachResponse carries the long-lived runtime credential. It is returned once
// and must only ever be written to the runtime's profile.
type AttachResponse struct {
	AgentID            string         `json:"agent_id"`
	RuntimeID          string         `json:"runtime_id"`
	RuntimeToken       string         `json:"runtime_token"`
	HeartbeatTimeoutMS int64          `json:"heartbeat_timeout_ms"`
	LeaseMS            int64          `json:"lease_ms"`
	NATS               NATSConnection `json:"nats"`
	Platform           PlatformInfo   `json:"platform"`
}

// RevokeRuntimeRequest revokes a runtime's credential.
type RevokeRuntimeRequest struct {
	RuntimeID string `json:"runtime_id"`
	// AgentID, when set, must own the runtime (a runtime unpairing itself).
	AgentID string `json:"agent_id,omitempty"`
}

// AuthenticateRequest resolves a runtime credential by its hash; the credential
// itself never travels on the bus.
type AuthenticateRequest struct {
	TokenHash string `json:"token_hash"`
}

// Identity is who a credential belongs to.
type Identity struct {
	AgentID   string `json:"agent_id"`
	RuntimeID string `json:"runtime_id"`
	// Revision is the revision of the runtime record the credential was
	// checked against: an answer remembered by its caller holds only while
	// the record stays at it (revoking or replacing a runtime changes it).
	Revision uint64 `json:"revision,omitempty"`
}

// The credentials service's pairing operations: codes for owners, the
// attach for a runtime being paired, revocation, and the lookups the
// gateway makes.
var (
	// The REST issue takes ttl_seconds and answers with no-store.
	OpPairingIssueCode = define[IssuePairingCodeRequest, PairingCode](OpInfo{Name: OpPairingIssue, Service: bus.ServiceCredentials, Caller: CallerOwner,
		REST: custom(route(http.MethodPost, "/agent-accounts/{agentId}/pairing-codes", http.StatusCreated, onAgent))})
	// The answer carries the runtime's credential, shown this once.
	OpPairingAttachRuntime = define[AttachRequest, AttachResponse](OpInfo{Name: OpPairingAttach, Service: bus.ServiceCredentials, Caller: CallerPairing,
		REST: noStore(post("/agent-runtimes/runtime/attach-via-pairing", nil))})
	// The REST revoke also forgets the credentials the gateway remembers
	// for the runtime.
	OpPairingRevokeRuntime = define[RevokeRuntimeRequest, mesh.Runtime](OpInfo{Name: OpPairingRevoke, Service: bus.ServiceCredentials, Caller: CallerOwner, Idempotent: true,
		REST: custom(post("/agent-runtimes/{runtimeId}/revoke", map[string]string{"runtimeId": "runtime_id"}))})
	OpPairingAuthenticateRuntime = define[AuthenticateRequest, Identity](OpInfo{Name: OpPairingAuthenticate, Service: bus.ServiceCredentials, Caller: CallerPlatform, Idempotent: true})
	OpPairingSealingKeyOf        = define[SealingKeyRequest, SealingKey](OpInfo{Name: OpPairingSealingKey, Service: bus.ServiceCredentials, Caller: CallerPlatform, Idempotent: true})
)

// IssuePairingCode issues a one-time pairing code.
func (c *Client) IssuePairingCode(ctx context.Context, req IssuePairingCodeRequest) (*PairingCode, error) {
	return Send(ctx, c, OpPairingIssueCode, req)
}

// Attach redeems a pairing code for a runtime credential.
func (c *Client) Attach(ctx context.Context, req AttachRequest) (*AttachResponse, error) {
	return Send(ctx, c, OpPairingAttachRuntime, req)
}

// RevokeRuntime revokes a runtime's credential.
func (c *Client) RevokeRuntime(ctx context.Context, req RevokeRuntimeRequest) (*mesh.Runtime, error) {
	return Send(ctx, c, OpPairingRevokeRuntime, req)
}

// SealingKey returns the public sealing key of the agent's active runtime;
// mesh.CodeNoSealingKey when it has no active runtime or its runtime has no key.
func (c *Client) SealingKey(ctx context.Context, agentID string) (*SealingKey, error) {
	return Send(ctx, c, OpPairingSealingKeyOf, SealingKeyRequest{AgentID: agentID})
}

// Authenticate resolves a runtime credential hash to its runtime.
func (c *Client) Authenticate(ctx context.Context, tokenHash string) (*Identity, error) {
	return Send(ctx, c, OpPairingAuthenticateRuntime, AuthenticateRequest{TokenHash: tokenHash})
}
