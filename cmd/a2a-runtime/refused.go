package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/internal/runtime/profile"
	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
)

// agentDeletedError is a refused credential whose agent no longer exists:
// pairing "the same agent" again, the advice for a revoked credential, is
// impossible.
type agentDeletedError struct{ agentID string }

func (e *agentDeletedError) Error() string {
	return fmt.Sprintf("%v: its agent %s no longer exists on the platform (it was deleted), so pairing again cannot bring it back; "+
		"remove this profile with a2a-runtime unpair, and to connect this machine to an agent, pair it with a code generated for an agent that exists",
		runtimeengine.ErrReauth, e.agentID)
}

// Unwrap keeps the exit code of a refused credential.
func (e *agentDeletedError) Unwrap() error { return runtimeengine.ErrReauth }

// whyRefused tells a refused credential whose agent was deleted from one
// that was revoked. The platform answers both alike (its runtime record is
// revoked either way, and the NATS server gives no reason at all), so the
// runtime asks for the agent's public card: the platform serves it for
// every agent that exists, and answers 404 once the agent is deleted.
func whyRefused(p profile.Profile, err error) error {
	if !errors.Is(err, runtimeengine.ErrReauth) || p.AgentID == "" {
		return err
	}
	if agentGone(p.APIBase, p.AgentID) {
		return &agentDeletedError{agentID: p.AgentID}
	}
	return err
}

// agentGone reports whether the platform at base says it has no agent id.
// Deleting an agent revokes its runtimes first and removes the agent a
// moment later, so the runtime asks for a short while; only a 404 counts,
// and no answer, or any other, leaves the question open.
func agentGone(base, id string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), agentGoneWait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, status := agentCard(ctx, base, id); status == http.StatusNotFound {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// agentGoneWait bounds how long a refused runtime asks whether its agent
// was deleted before it exits.
const agentGoneWait = 1500 * time.Millisecond

// agentCard asks the platform at base for the public card of agent id: the
// agent's name and the answer's status, 0 without an answer.
func agentCard(ctx context.Context, base, id string) (name string, status int) {
	u := strings.TrimRight(base, "/") + "/a2a/" + url.PathEscape(id) + "/.well-known/agent-card.json"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", 0
	}
	req.Header.Set("User-Agent", "a2a-runtime")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", 0
	}
	defer resp.Body.Close()
	var card struct {
		Name string `json:"name"`
	}
	if resp.StatusCode == http.StatusOK {
		_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&card)
	}
	return card.Name, resp.StatusCode
}
