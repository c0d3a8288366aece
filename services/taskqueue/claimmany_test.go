package taskqueue_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/meshtest"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestClaimMany_ClaimsEachOfferOnItsOwnAndAgainWhenRepeated: one request
// claims several offered runs; a run that ended meanwhile is refused on
// its own without failing the others, and the same request sent again
// (its answer was lost) answers with the same runs.
func TestClaimMany_ClaimsEachOfferOnItsOwnAndAgainWhenRepeated(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.HeartbeatTimeout = time.Minute })
	agent := p.CreateAgent("batch")
	rt := p.OnlineRuntime(t, agent.ID)
	nc := p.RuntimeConn(t, rt)
	rc := meshapi.NewClient(nc).Runtime(agent.ID, rt.RuntimeID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	runs := []mesh.TaskRun{p.CreateTask(agent.ID, "one"), p.CreateTask(agent.ID, "two"), p.CreateTask(agent.ID, "three")}
	offers, err := rc.Offer(ctx, meshapi.OfferRequest{Wait: 5 * time.Second, Max: 3})
	if err != nil || len(offers) != 3 {
		t.Fatalf("offers: %+v, %v", offers, err)
	}
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + runs[2].ID + "/cancel", Owner: true, JSON: map[string]any{}}).Expect(t, http.StatusOK)
	req := meshapi.ClaimManyRequest{}
	for _, o := range offers {
		req.Claims = append(req.Claims, meshapi.ClaimRequest{TaskRunID: o.TaskRunID, Attempt: o.Attempt})
	}
	for try := range 2 {
		res, err := rc.ClaimMany(ctx, req)
		if err != nil {
			t.Fatalf("try %d: %v", try, err)
		}
		if len(res.Claimed) != 2 || res.Claimed[0].ID != runs[0].ID || res.Claimed[1].ID != runs[1].ID {
			t.Fatalf("try %d claimed %+v, want %s and %s in order", try, res.Claimed, runs[0].ID, runs[1].ID)
		}
		for _, r := range res.Claimed {
			if r.Status != mesh.StatusRunning || r.RuntimeID != rt.RuntimeID || r.Attempt != 1 {
				t.Fatalf("try %d: claimed run %s is %s by %q attempt %d", try, r.ID, r.Status, r.RuntimeID, r.Attempt)
			}
		}
		if len(res.Refused) != 1 || res.Refused[0].TaskRunID != runs[2].ID || res.Refused[0].Error.Code != mesh.CodeInvalidTransition {
			t.Fatalf("try %d refused %+v, want the canceled %s as INVALID_TRANSITION", try, res.Refused, runs[2].ID)
		}
	}
	// Bounds.
	if _, err := rc.ClaimMany(ctx, meshapi.ClaimManyRequest{}); mesh.AsError(err).Code != mesh.CodeInvalidRequest {
		t.Fatalf("an empty claim: %v, want INVALID_REQUEST", err)
	}
	tooMany := meshapi.ClaimManyRequest{Claims: make([]meshapi.ClaimRequest, meshapi.MaxOffers+1)}
	if _, err := rc.ClaimMany(ctx, tooMany); mesh.AsError(err).Code != mesh.CodeInvalidRequest {
		t.Fatalf("%d claims at once: %v, want INVALID_REQUEST", len(tooMany.Claims), err)
	}
}

// TestRuntime_WithFreeSlotsClaimsSeveralRunsInOneRequest: a runtime with
// four free slots and four pending runs asks for work once and claims
// the four in one request.
func TestRuntime_WithFreeSlotsClaimsSeveralRunsInOneRequest(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	var agent mesh.Agent
	p.Do(http.MethodPost, "/agent-accounts", map[string]any{"name": "four at once"}, &agent)
	var runs []mesh.TaskRun
	for range 4 {
		runs = append(runs, p.CreateTask(agent.ID, "work"))
	}
	var mu sync.Mutex
	var requests, claims int
	sub, err := p.Conn().NC.Subscribe(bus.RuntimeSubjectPattern(bus.RuntimeOpClaimMany), func(m *nats.Msg) {
		var req meshapi.ClaimManyRequest
		if json.Unmarshal(m.Data, &req) == nil {
			mu.Lock()
			requests++
			claims += len(req.Claims)
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := p.Conn().NC.Flush(); err != nil {
		t.Fatal(err)
	}
	meshtest.ConnectAgent(t, p, agent, meshtest.AgentOptions{Concurrency: 4})
	for _, r := range runs {
		p.WaitTask(r.ID, 30*time.Second, func(r mesh.TaskRun) bool { return r.Status == mesh.StatusCompleted })
	}
	mu.Lock()
	defer mu.Unlock()
	if requests != 1 || claims != 4 {
		t.Fatalf("the runtime sent %d claim requests for %d runs, want one for all four", requests, claims)
	}
}

// TestCancel_TheRuntimeHoldingTheRunHearsANoticeAtOnce: canceling a run a
// runtime holds sends a notice on its agent's cancel subject, which the
// runtime's own connection may read; a pending run's cancel sends none
// (no runtime holds it).
func TestCancel_TheRuntimeHoldingTheRunHearsANoticeAtOnce(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.HeartbeatTimeout, c.Lease = time.Minute, time.Minute })
	agent := p.CreateAgent("canceled")
	rt := p.OnlineRuntime(t, agent.ID)
	nc := p.RuntimeConn(t, rt)
	notices, err := nc.SubscribeSync(bus.CancelFilter(agent.ID))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	pending := p.CreateTask(agent.ID, "never claimed")
	held := p.CreateTask(agent.ID, "held")
	rc := meshapi.NewClient(nc).Runtime(agent.ID, rt.RuntimeID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := rc.Claim(ctx, meshapi.ClaimRequest{TaskRunID: held.ID, Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []mesh.TaskRun{pending, held} {
		p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + r.ID + "/cancel", Owner: true, JSON: map[string]any{}}).Expect(t, http.StatusOK)
	}
	msg, err := notices.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("no cancel notice: %v", err)
	}
	if _, id, ok := bus.ParseCancelSubject(msg.Subject); !ok || id != held.ID {
		t.Fatalf("cancel notice on %s, want one for the held run %s", msg.Subject, held.ID)
	}
	if n, _, _ := notices.Pending(); n != 0 {
		t.Fatalf("%d more notices, want none for the pending run", n)
	}
}
