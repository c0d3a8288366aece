package delegation

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Keys of BucketDelegation: the rules of an agent, the partners, and which delegating run a partner's task belongs to (the
// partner's task ids are the partner's to choose, so they are hashed into
// the narrow key alphabet).
func ruleKey(agentID, ruleID string) string { return "rule." + agentID + "." + ruleID }
func partnerKey(partnerID string) string    { return "partner." + partnerID }

const partnerPrefix = "partner.*"

func remoteKey(partnerID, remoteTaskID string) string {
	return "remote." + partnerID + "." + secret.Hash(remoteTaskID)[:40]
}

// childKey links a run to a task it delegated from inside its work.
func childKey(parentID, childID string) string { return "child." + parentID + "." + childID }

// childrenOf filters the keys of a run's children ("child.*.*": all).
func childrenOf(parentID string) string { return "child." + parentID + ".*" }

// childRecord is a task a run delegated from inside its work.
type childRecord struct {
	ParentID string `json:"parent_task_run_id"`
	ChildID  string `json:"task_run_id"`
	AgentID  string `json:"agent_id"`
	// RequestID is the runtime's id of the send, so a send repeated (its
	// answer lost) finds the task it made.
	RequestID string `json:"request_id,omitempty"`
	// Attempt is the parent's attempt (turn) that delegated it: the task is
	// canceled when that turn ends.
	Attempt   int       `json:"attempt"`
	CreatedAt time.Time `json:"created_at"`
	// Settled is set once the parent's turn ended and the task was
	// canceled or had ended already.
	Settled bool `json:"settled,omitempty"`
}

// partnerRecord is a partner with its secrets: the shared secret its
// callbacks are signed with, and the API key this platform sends it.
type partnerRecord struct {
	meshapi.Partner
	Secret string `json:"secret"`
	APIKey string `json:"api_key,omitempty"`
}

// remoteRecord names the delegating run of a partner's task.
type remoteRecord struct {
	TaskRunID string    `json:"task_run_id"`
	CreatedAt time.Time `json:"created_at"`
}

// store reads and writes the delegation bucket.
type store struct {
	rules    *bus.Records[meshapi.RoutingRule]
	partners *bus.Records[partnerRecord]
	remotes  *bus.Records[remoteRecord]
	children *bus.Records[childRecord]
}

func openStore(ctx context.Context, js jetstream.JetStream) (*store, error) {
	rules, err := bus.OpenRecords[meshapi.RoutingRule](ctx, js, bus.BucketDelegation)
	if err != nil {
		return nil, err
	}
	partners, err := bus.OpenRecords[partnerRecord](ctx, js, bus.BucketDelegation)
	if err != nil {
		return nil, err
	}
	remotes, err := bus.OpenRecords[remoteRecord](ctx, js, bus.BucketDelegation)
	if err != nil {
		return nil, err
	}
	children, err := bus.OpenRecords[childRecord](ctx, js, bus.BucketDelegation)
	if err != nil {
		return nil, err
	}
	return &store{rules: rules, partners: partners, remotes: remotes, children: children}, nil
}

// partner returns a partner with its secrets.
func (st *store) partner(ctx context.Context, id string) (*partnerRecord, error) {
	if !mesh.ValidID(id) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "partner %q not found", id)
	}
	p, _, err := st.partners.Get(ctx, partnerKey(id))
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "partner %s not found", id)
	}
	return p, err
}

// keys lists the keys matching a filter.
func keys(ctx context.Context, kv jetstream.KeyValue, filter string) ([]string, error) {
	lister, err := kv.ListKeysFiltered(ctx, filter)
	if err != nil {
		return nil, err
	}
	var out []string
	for k := range lister.Keys() {
		out = append(out, k)
	}
	return out, nil
}

// childrenOfRun returns the tasks a run delegated from inside its work,
// oldest first.
func (st *store) childrenOfRun(ctx context.Context, parentID string) ([]*childRecord, error) {
	ks, err := keys(ctx, st.children.KV(), childrenOf(parentID))
	if err != nil {
		return nil, err
	}
	var out []*childRecord
	for _, k := range ks {
		c, _, err := st.children.Get(ctx, k)
		if errors.Is(err, mesh.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *childRecord) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}
