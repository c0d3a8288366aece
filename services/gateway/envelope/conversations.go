package envelope

import (
	"context"
	"errors"

	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// conversationRecord is the conversation a caller's conversationId stands
// for (seed 002's ids are the caller's to choose).
type conversationRecord struct {
	ConversationID string `json:"conversation_id"`
}

// conversationKey is the key of BucketA2ADoors for a caller's
// conversationId, hashed into the key alphabet.
func conversationKey(callerID, conversationID string) string {
	return "econv." + secret.Hash(callerID + "\x00" + conversationID)[:48]
}

// conversation returns the platform conversation of a caller's
// conversationId, starting one the first time (concurrent first uses agree).
func (d *Door) conversation(ctx context.Context, callerID, conversationID string) (string, error) {
	key := conversationKey(callerID, conversationID)
	if rec, _, err := d.conversations.Get(ctx, key); err == nil {
		return rec.ConversationID, nil
	} else if !errors.Is(err, mesh.ErrNotFound) {
		return "", err
	}
	conv, err := d.client.CreateConversation(ctx, meshapi.CreateConversationRequest{})
	if err != nil {
		return "", err
	}
	if _, err := d.conversations.Create(ctx, key, &conversationRecord{ConversationID: conv.ID}); errors.Is(err, mesh.ErrConflict) {
		rec, _, err := d.conversations.Get(ctx, key)
		if err != nil {
			return "", err
		}
		return rec.ConversationID, nil
	} else if err != nil {
		return "", err
	}
	return conv.ID, nil
}
