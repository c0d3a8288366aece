package admission

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/internal/homes"
)

// Conversations are the platform conversations that the ids callers choose
// at the partner and envelope endpoints stand for (a partner's session id,
// an envelope's conversationId), kept in BucketA2AEndpoints under each
// endpoint's own keys, in the home region of the agent a key was first
// used with.
type Conversations struct {
	recs   *bus.RegionRecords[conversationRecord]
	client *meshapi.Client
	homes  *homes.Directory
}

// conversationRecord is the conversation one key stands for.
type conversationRecord struct {
	ConversationID string `json:"conversation_id"`
}

// OpenConversations opens the endpoints' buckets; homes tells where agents
// are homed (nil: every key is kept in this region's bucket).
func OpenConversations(ctx context.Context, js jetstream.JetStream, client *meshapi.Client, homes *homes.Directory) (*Conversations, error) {
	c := &Conversations{recs: bus.NewRegionRecords[conversationRecord](js, bus.BucketA2AEndpoints), client: client, homes: homes}
	if _, err := c.recs.In(ctx, ""); err != nil {
		return nil, err
	}
	return c, nil
}

// Get returns the conversation a key stands for, used with an agent,
// starting one the first time the key is used (concurrent first uses agree
// on one). A key is kept in the home region of the agent it was first used
// with; used with an agent of another region, it is found there. A region
// that cannot be reached is passed over, so a key first used while its
// region is down starts a conversation of its own rather than wait.
func (c *Conversations) Get(ctx context.Context, agentID, key string) (string, error) {
	home := ""
	if c.homes != nil {
		var err error
		if home, err = c.homes.Of(ctx, agentID); err != nil {
			return "", err
		}
	}
	recs, err := c.recs.In(ctx, home)
	if err != nil {
		return "", err
	}
	if rec, _, err := recs.Get(ctx, key); err == nil {
		return rec.ConversationID, nil
	} else if !errors.Is(err, mesh.ErrNotFound) {
		return "", err
	}
	if id := c.elsewhere(ctx, home, key); id != "" {
		return id, nil
	}
	conv, err := c.client.CreateConversation(ctx, meshapi.CreateConversationRequest{})
	if err != nil {
		return "", err
	}
	if _, err := recs.Create(ctx, key, &conversationRecord{ConversationID: conv.ID}); errors.Is(err, mesh.ErrConflict) {
		rec, _, err := recs.Get(ctx, key)
		if err != nil {
			return "", err
		}
		return rec.ConversationID, nil
	} else if err != nil {
		return "", err
	}
	return conv.ID, nil
}

// elsewhereWait bounds the look for a key in another region: one that
// does not answer by then (it is down) is passed over.
const elsewhereWait = time.Second

// elsewhere looks for a key in the buckets of the regions other than home,
// all at once, and returns the conversation it stands for there ("" when
// none that answers has it).
func (c *Conversations) elsewhere(ctx context.Context, home, key string) string {
	if c.homes == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, elsewhereWait)
	defer cancel()
	found := make(chan string, 1)
	var wg sync.WaitGroup
	for _, region := range append([]string{c.homes.Region()}, c.homes.Others()...) {
		if region == home {
			continue
		}
		wg.Go(func() {
			recs, err := c.recs.In(ctx, region)
			if err != nil {
				return
			}
			if rec, _, err := recs.Get(ctx, key); err == nil {
				select {
				case found <- rec.ConversationID:
				default:
				}
			}
		})
	}
	wg.Wait()
	select {
	case id := <-found:
		return id
	default:
		return ""
	}
}
