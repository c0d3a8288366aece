package envelope

import (
	"context"

	"github.com/a2amesh/a2amesh/internal/secret"
)

// conversationKey is the key of BucketA2AEndpoints for a caller's
// conversationId (seed 002's ids are the caller's to choose), hashed into
// the key alphabet.
func conversationKey(callerID, conversationID string) string {
	return "econv." + secret.Hash(callerID + "\x00" + conversationID)[:48]
}

// conversation returns the platform conversation of a caller's
// conversationId with an agent, starting one the first time.
func (d *Endpoint) conversation(ctx context.Context, agentID, callerID, conversationID string) (string, error) {
	return d.conversations.Get(ctx, agentID, conversationKey(callerID, conversationID))
}
