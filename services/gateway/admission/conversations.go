package admission

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Conversations are the platform conversations that the ids callers choose
// at the partner and envelope endpoints stand for (a partner's session id,
// an envelope's conversationId), kept in BucketA2AEndpoints under each
// endpoint's own keys.
type Conversations struct {
	recs   *bus.Records[conversationRecord]
	client *meshapi.Client
}

// conversationRecord is the conversation one key stands for.
type conversationRecord struct {
	ConversationID string `json:"conversation_id"`
}

// OpenConversations opens the endpoints' bucket.
func OpenConversations(ctx context.Context, js jetstream.JetStream, client *meshapi.Client) (*Conversations, error) {
	recs, err := bus.OpenRecords[conversationRecord](ctx, js, bus.BucketA2AEndpoints)
	if err != nil {
		return nil, err
	}
	return &Conversations{recs: recs, client: client}, nil
}

// Get returns the conversation a key stands for, starting one the first
// time the key is used (concurrent first uses agree on one).
func (c *Conversations) Get(ctx context.Context, key string) (string, error) {
	if rec, _, err := c.recs.Get(ctx, key); err == nil {
		return rec.ConversationID, nil
	} else if !errors.Is(err, mesh.ErrNotFound) {
		return "", err
	}
	conv, err := c.client.CreateConversation(ctx, meshapi.CreateConversationRequest{})
	if err != nil {
		return "", err
	}
	if _, err := c.recs.Create(ctx, key, &conversationRecord{ConversationID: conv.ID}); errors.Is(err, mesh.ErrConflict) {
		rec, _, err := c.recs.Get(ctx, key)
		if err != nil {
			return "", err
		}
		return rec.ConversationID, nil
	} else if err != nil {
		return "", err
	}
	return conv.ID, nil
}
