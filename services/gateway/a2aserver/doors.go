package a2aserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2amesh/a2amesh/internal/a2atask"
	"github.com/a2amesh/a2amesh/mesh"
)

// What the platform's older A2A doors (the partner routes of seed 003 and
// the envelope protocol of seed 002, both in the gateway) share with this
// one: who is calling and what they reach, the rate limit, and who created
// a task, so a task created through any door is seen by the same caller
// through every other.

// ErrRateLimited is the error of a caller over its rate limit.
var ErrRateLimited = errRateLimited

// Admit authenticates a request of a platform-wide door and takes one
// request from the caller's rate limit (Allow). It tries the credentials in
// the order this door does: an API key, then a bearer token (owner
// credential, platform-signed JWT, identity-provider JWT); no credential is
// an anonymous caller. Refusals are A2A errors (a2a.ErrUnauthenticated),
// and set what the answer needs in w's headers (WWW-Authenticate,
// Retry-After).
func (s *Server) Admit(w http.ResponseWriter, r *http.Request) (*Caller, error) {
	c, err := s.auth.identify(r)
	if err != nil {
		if IsUnauthenticated(err) {
			w.Header().Set("WWW-Authenticate", challenge)
		}
		return nil, err
	}
	if err := s.Allow(w, c); err != nil {
		return nil, err
	}
	return c, nil
}

// Challenge sets the WWW-Authenticate header of a 401 answer: the
// credentials the doors take.
func Challenge(w http.ResponseWriter) { w.Header().Set("WWW-Authenticate", challenge) }

// Allow takes one request of the caller from its rate limit: the same limit
// as this door's (RateLimitPerMinute), counted for the platform-wide doors
// together. When refused, Retry-After is set on w and the error wraps
// ErrRateLimited.
func (s *Server) Allow(w http.ResponseWriter, c *Caller) error {
	ok, wait := s.limiter.allow("doors|" + c.RateKey)
	if ok {
		return nil
	}
	retry := retryAfter(w, wait)
	return fmt.Errorf("%w: %d requests a minute; retry after %s s", errRateLimited, s.cfg.RateLimitPerMinute, retry)
}

// Anonymous is the caller of a request whose credential is something else
// than the door's (a partner's signed callback): counted by client address.
func Anonymous(r *http.Request) *Caller {
	return &Caller{ID: callerPublic, Kind: callerPublic, RateKey: "ip:" + clientAddr(r)}
}

// RateLimitPerMinute is the configured limit.
func (s *Server) RateLimitPerMinute() int { return s.cfg.RateLimitPerMinute }

// Agent returns an agent account.
func (s *Server) Agent(ctx context.Context, id string) (*mesh.Agent, error) {
	return s.agent(ctx, id)
}

// Agents lists every agent account this gateway knows.
func (s *Server) Agents() []*mesh.Agent {
	var out []*mesh.Agent
	s.agents.Range(func(_ string, a *mesh.Agent) bool {
		out = append(out, a)
		return true
	})
	return out
}

// Online reports whether an agent has an active runtime whose heartbeats
// arrive.
func (s *Server) Online(ctx context.Context, agentID string) bool {
	return s.handler.online(ctx, agentID)
}

// Adopt records the caller who created a task through another door, so
// this door shows the task to the same caller (and to nobody else but the
// owner). A task recorded already keeps its creator.
func (s *Server) Adopt(ctx context.Context, run *mesh.TaskRun, c *Caller, version string) error {
	if version == "" {
		version = a2atask.Version10
	}
	return s.records.create(ctx, &record{
		TaskID: run.ID, AgentID: run.TargetAgentID, ContextID: run.ConversationID, Caller: c.ID,
		Version: version, History: []*a2a.Message{a2atask.InputMessage(run)}, CreatedAt: time.Now().UTC(),
	})
}

// Creator returns the ID of the caller recorded with a task, or "" when no
// door recorded one (only the owner sees such a task).
func (s *Server) Creator(ctx context.Context, taskID string) (string, error) {
	rec, _, err := s.records.get(ctx, taskID)
	if err != nil || rec == nil {
		return "", err
	}
	return rec.Caller, nil
}

// IsUnauthenticated reports whether err refuses a missing or invalid credential.
func IsUnauthenticated(err error) bool { return errors.Is(err, a2a.ErrUnauthenticated) }

// ErrorMessage is the message of an A2A error the door returned, or the
// error's text: what the older doors put in their own error shapes.
func ErrorMessage(err error) string {
	var ae *a2a.Error
	if errors.As(err, &ae) && ae.Message != "" {
		return ae.Message
	}
	return err.Error()
}
