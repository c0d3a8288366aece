package delegation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/a2atask"
	"github.com/a2amesh/a2amesh/internal/a2atoken"
	"github.com/a2amesh/a2amesh/internal/tracing"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Calls to a delegate agent are real A2A 1.0 calls (JSON-RPC, the official
// Go client) to its endpoint on the platform's gateway, with a bearer token the
// platform signs for the delegating agent: the delegate's endpoint
// authenticates, scopes and rate-limits them as any caller's, and the task
// it creates records the delegating agent as its initiator, the delegating
// run as its parent and the delegation chain (from the token's claims).

// delegationScopes are what a delegation token may do at the delegate's endpoint.
var delegationScopes = []string{meshapi.ScopeSend, meshapi.ScopeRead, meshapi.ScopeCancel}

// bearerTransport adds a token to every request.
type bearerTransport struct {
	token string
	next  http.RoundTripper
}

// RoundTrip sends r with the token.
func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	r, span := tracing.StartHTTPClient(r, tracer, "delegation A2A call")
	resp, err := b.next.RoundTrip(r)
	tracing.EndHTTPClient(span, resp, err)
	return resp, err
}

// agentClient returns an A2A client of the delegate's endpoint, acting for the
// parent's agent.
func (s *Service) agentClient(ctx context.Context, parent *mesh.TaskRun, target string) (*a2aclient.Client, error) {
	token, err := s.signer.Sign(a2atoken.TokenRequest{
		Subject: parent.TargetAgentID, Audience: target, Scopes: delegationScopes, TTL: 5 * time.Minute,
		ParentTaskRunID: parent.ID, DelegationChain: append(slices.Clone(parent.DelegationChain), parent.TargetAgentID),
	})
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: bearerTransport{token: token, next: http.DefaultTransport}, Timeout: s.cfg.CallTimeout}
	return a2aclient.NewFromEndpoints(ctx, []*a2a.AgentInterface{{
		URL: s.cfg.GatewayURL + "/a2a/" + target, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2atask.Version10,
	}}, a2aclient.WithDefaultsDisabled(), a2aclient.WithJSONRPCTransport(hc))
}

// sendToAgent hands the parent's current turn to its delegate: a new task,
// or (childID set) the answer to the delegate task's question. It returns
// the delegate's task id. Calls that fail for a passing reason are retried.
func (s *Service) sendToAgent(ctx context.Context, parent *mesh.TaskRun, childID string) (string, error) {
	target := parent.DelegatedTo.AgentID
	msg := a2a.NewMessage(a2a.MessageRoleUser, messageParts(parent)...)
	// The id makes a repeated send (after a restart) the same task.
	msg.ID = "delegation." + parent.ID
	if childID != "" {
		msg.ID = fmt.Sprintf("delegation.%s.%d", parent.ID, parent.Attempt)
		msg.TaskID = a2a.TaskID(childID)
	}
	if skill, _ := parent.Metadata[meshapi.SkillKey].(string); skill != "" {
		msg.Metadata = map[string]any{"skillId": skill}
	}
	return s.sendMessage(ctx, parent, target, msg)
}

// sendMessage sends msg to the target's endpoint for the parent's agent and
// returns the task id the endpoint answered. Calls that fail for a passing
// reason are retried; the message id makes a repeat the same task.
func (s *Service) sendMessage(ctx context.Context, parent *mesh.TaskRun, target string, msg *a2a.Message) (string, error) {
	var id string
	err := s.retry(ctx, func() error {
		c, err := s.agentClient(ctx, parent, target)
		if err != nil {
			return err
		}
		defer func() { _ = c.Destroy() }()
		res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
		if err != nil {
			return err
		}
		task, ok := res.(*a2a.Task)
		if !ok || task.ID == "" {
			return permanent(errors.New("the delegate's endpoint answered without a task"))
		}
		id = string(task.ID)
		return nil
	})
	if err != nil {
		return "", &mesh.RunError{
			Code:    mesh.ReasonDelegationFailed,
			Message: fmt.Sprintf("the A2A endpoint of %s did not take the delegated task: %s", s.describeAgent(ctx, target), err.Error()),
			Details: map[string]any{"target_agent_id": target},
		}
	}
	return id, nil
}

// cancelChild cancels the delegate's task, with the parent agent's token.
func (s *Service) cancelChild(ctx context.Context, parent, child *mesh.TaskRun) {
	ctx = context.WithoutCancel(ctx)
	err := s.retry(ctx, func() error {
		c, err := s.agentClient(ctx, parent, child.TargetAgentID)
		if err != nil {
			return err
		}
		defer func() { _ = c.Destroy() }()
		_, err = c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: a2a.TaskID(child.ID)})
		if errors.Is(err, a2a.ErrTaskNotCancelable) {
			return nil
		}
		return err
	})
	if err != nil {
		s.log.Warn().Ctx(ctx).Err(err).Str("task_run_id", child.ID).Msg("delegate's task not canceled")
	}
}

// messageParts are the parts of the parent's input: its text and its data.
func messageParts(run *mesh.TaskRun) []*a2a.Part {
	var in struct {
		Text string `json:"text"`
		Data any    `json:"data"`
	}
	_ = json.Unmarshal(run.Input, &in)
	var parts []*a2a.Part
	if in.Text != "" || in.Data == nil {
		parts = append(parts, a2a.NewTextPart(in.Text))
	}
	if in.Data != nil {
		parts = append(parts, a2a.NewDataPart(in.Data))
	}
	return parts
}

// permanentError marks a failure that a retry would only repeat.
type permanentError struct{ err error }

// Error is the failure's text.
func (p permanentError) Error() string { return p.err.Error() }

// Unwrap gives errors.Is and errors.As the failure.
func (p permanentError) Unwrap() error { return p.err }

func permanent(err error) error { return permanentError{err} }

// isPermanent reports whether a call failed for good: the endpoint refused the
// request (an A2A error other than an internal one, or a 4xx answer).
func isPermanent(err error) bool {
	var p permanentError
	if errors.As(err, &p) {
		return true
	}
	var ae *a2a.Error
	if errors.As(err, &ae) {
		return !errors.Is(err, a2a.ErrInternalError)
	}
	return strings.Contains(err.Error(), "HTTP status: 4")
}

// retry runs call up to five times, with a doubling pause, until it
// succeeds or fails for good.
func (s *Service) retry(ctx context.Context, call func() error) error {
	b := bus.Backoff{Initial: s.cfg.RetryBackoff, Max: s.cfg.RetryBackoff << 4}
	var err error
	for try := 0; try < 5; try++ {
		if err = call(); err == nil || isPermanent(err) || ctx.Err() != nil {
			return err
		}
		if b.Sleep(ctx) != nil {
			return err
		}
	}
	return err
}
