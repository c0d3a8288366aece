package meshapi

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/a2amesh/a2amesh/bus"
)

// A2A API key operations (service "credentials", which owns every credential).
const (
	OpA2AKeyCreate       = "a2a_key_create"
	OpA2AKeyList         = "a2a_key_list"
	OpA2AKeyRevoke       = "a2a_key_revoke"
	OpA2AKeyAuthenticate = "a2a_key_authenticate"
)

// Scopes of the A2A endpoint: what a caller's credential lets it do with an
// agent's tasks. A method needs one scope (see docs/a2a.md).
const (
	// ScopeSend: send messages (create and continue tasks).
	ScopeSend = "a2a:send"
	// ScopeRead: get, list and subscribe to tasks; read the extended card
	// and task artifacts.
	ScopeRead = "a2a:read"
	// ScopeCancel: cancel tasks.
	ScopeCancel = "a2a:cancel"
	// ScopePush: manage push notification configurations.
	ScopePush = "a2a:push"
)

// A2AScopes lists every A2A scope; keys get all of them unless asked otherwise.
func A2AScopes() []string { return []string{ScopeSend, ScopeRead, ScopeCancel, ScopePush} }

// ValidA2AScope reports whether s is an A2A scope.
func ValidA2AScope(s string) bool { return slices.Contains(A2AScopes(), s) }

// CreateA2AKeyRequest issues an API key for calling one agent over A2A.
type CreateA2AKeyRequest struct {
	AgentID string `json:"agent_id"`
	// Name labels the key for people (e.g. "billing bot").
	Name string `json:"name,omitempty"`
	// Scopes narrow what the key may do; empty grants every A2A scope.
	Scopes []string `json:"scopes,omitempty"`
}

// A2AKey is an API key as listed: never the key itself.
type A2AKey struct {
	KeyID   string `json:"key_id"`
	AgentID string `json:"agent_id"`
	Name    string `json:"name,omitempty"`
	// Prefix is the key's first characters, enough to recognise it.
	Prefix    string    `json:"prefix"`
	Scopes    []string  `json:"scopes"`
	CreatedAt time.Time `json:"created_at"`
}

// CreateA2AKeyResponse carries the key, shown once; the platform keeps only
// its hash.
type CreateA2AKeyResponse struct {
	A2AKey
	APIKey string `json:"api_key"`
}

// ListA2AKeysRequest lists an agent's keys.
type ListA2AKeysRequest struct {
	AgentID string `json:"agent_id"`
}

// A2AKeyList is an agent's keys, oldest first.
type A2AKeyList struct {
	Keys []A2AKey `json:"keys"`
}

// RevokeA2AKeyRequest revokes one of an agent's keys.
type RevokeA2AKeyRequest struct {
	AgentID string `json:"agent_id"`
	KeyID   string `json:"key_id"`
}

// AuthenticateA2AKeyRequest resolves an API key by its hash; the key itself
// never travels on the bus.
type AuthenticateA2AKeyRequest struct {
	KeyHash string `json:"key_hash"`
}

// The credentials service's operations on an agent's A2A API keys. Their
// routes are the agent's A2A endpoint's (gateway/a2aserver), which takes
// the create's name and scopes from its body and forgets a revoked key's
// admission.
var (
	// The answer carries the key, shown this once.
	OpA2AKeysCreate = define[CreateA2AKeyRequest, CreateA2AKeyResponse](OpInfo{Name: OpA2AKeyCreate, Service: bus.ServiceCredentials, Caller: CallerOwner,
		REST: custom(noStore(route(http.MethodPost, "/a2a/{agentId}/api-keys", http.StatusCreated, onAgent)))})
	OpA2AKeysList = define[ListA2AKeysRequest, A2AKeyList](OpInfo{Name: OpA2AKeyList, Service: bus.ServiceCredentials, Caller: CallerOwner, Idempotent: true,
		REST: custom(get("/a2a/{agentId}/api-keys", onAgent))})
	OpA2AKeysRevoke = define[RevokeA2AKeyRequest, Empty](OpInfo{Name: OpA2AKeyRevoke, Service: bus.ServiceCredentials, Caller: CallerOwner, Idempotent: true,
		REST: custom(route(http.MethodDelete, "/a2a/{agentId}/api-keys/{keyId}", http.StatusNoContent, map[string]string{"agentId": "agent_id", "keyId": "key_id"}))})
	OpA2AKeysAuthenticate = define[AuthenticateA2AKeyRequest, AdmittedA2AKey](OpInfo{Name: OpA2AKeyAuthenticate, Service: bus.ServiceCredentials, Caller: CallerPlatform, Idempotent: true})
)

// CreateA2AKey issues an A2A API key for an agent.
func (c *Client) CreateA2AKey(ctx context.Context, req CreateA2AKeyRequest) (*CreateA2AKeyResponse, error) {
	return Send(ctx, c, OpA2AKeysCreate, req)
}

// ListA2AKeys lists an agent's A2A API keys.
func (c *Client) ListA2AKeys(ctx context.Context, agentID string) (*A2AKeyList, error) {
	return Send(ctx, c, OpA2AKeysList, ListA2AKeysRequest{AgentID: agentID})
}

// RevokeA2AKey revokes one of an agent's A2A API keys.
func (c *Client) RevokeA2AKey(ctx context.Context, req RevokeA2AKeyRequest) error {
	_, err := Send(ctx, c, OpA2AKeysRevoke, req)
	return err
}

// AdmittedA2AKey answers AuthenticateA2AKey: the key, and the revision of
// its record, by which the gateway remembers the answer (a revoked key's
// record is gone).
type AdmittedA2AKey struct {
	A2AKey
	Revision uint64 `json:"revision"`
}

// AuthenticateA2AKey resolves an A2A API key hash to its key.
func (c *Client) AuthenticateA2AKey(ctx context.Context, keyHash string) (*AdmittedA2AKey, error) {
	return Send(ctx, c, OpA2AKeysAuthenticate, AuthenticateA2AKeyRequest{KeyHash: keyHash})
}
