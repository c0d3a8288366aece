package meshapi

import (
	"context"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
)

// Registry operations (service "registry"); the table defines them
// (ops.go).
const (
	OpRegistryList = "list"
)

// HeartbeatRequest is a runtime's heartbeat (seed 001 §4.2). The runtime is
// identified by the subject it arrives on.
type HeartbeatRequest struct {
	// RunningTaskRunIDs lists the runs the runtime still holds (working on
	// them or owing their report); their leases are renewed, and only
	// theirs: a run the runtime holds but does not list belonged to an
	// earlier process of it and is left to expire. Nil (null, or the field
	// absent, as in seed 001's heartbeat) renews every run the runtime holds.
	RunningTaskRunIDs []string `json:"running_task_run_ids"`
	// AdapterUnreachable says the runtime's local adapter does not answer:
	// the runtime is online but claims no task runs until it does.
	AdapterUnreachable bool `json:"adapter_unreachable,omitempty"`
	// AbandonedClaimKeys are keys of the runtime's claiming requests whose
	// answers it lost and that it no longer asks about (at most
	// MaxAbandonedClaimKeys; the task queue reads no more). A run held for
	// the runtime under one of them, that it neither lists in
	// RunningTaskRunIDs nor took up under the key, was stored after the
	// runtime stopped asking: the task queue gives it back to pending, as
	// a release under the key would. Read only with RunningTaskRunIDs.
	AbandonedClaimKeys []string `json:"abandoned_claim_keys,omitempty"`
}

// MaxAbandonedClaimKeys bounds HeartbeatRequest.AbandonedClaimKeys.
const MaxAbandonedClaimKeys = 64

// HeartbeatResponse acknowledges a heartbeat.
type HeartbeatResponse struct {
	Status             mesh.Presence `json:"status"`
	HeartbeatTimeoutMS int64         `json:"heartbeat_timeout_ms"`
	ServerTime         time.Time     `json:"server_time"`
}

// ListRuntimesRequest lists an agent's runtimes.
type ListRuntimesRequest struct {
	AgentID string `json:"agent_id"`
}

// RuntimeList is an agent's runtimes, the active one first.
type RuntimeList struct {
	Runtimes []mesh.RuntimeView `json:"runtimes"`
}

// ListRuntimes lists an agent's runtimes with their presence.
func (c *Client) ListRuntimes(ctx context.Context, agentID string) (*RuntimeList, error) {
	return Send(ctx, c, OpRegistryListRuntimes, ListRuntimesRequest{AgentID: agentID})
}

// AgentOnline reports whether an agent's active runtime is online, as the
// registry of its home region, which keeps its runtimes' presence, says.
func (c *Client) AgentOnline(ctx context.Context, agentID string) (bool, error) {
	l, err := c.ListRuntimes(ctx, agentID)
	if err != nil {
		return false, err
	}
	for _, rt := range l.Runtimes {
		if rt.State == mesh.RuntimeActive && rt.Status == mesh.PresenceOnline {
			return true, nil
		}
	}
	return false, nil
}
