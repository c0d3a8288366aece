package delegation

import (
	"context"
	"errors"
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
	return &store{rules: rules, partners: partners, remotes: remotes}, nil
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
