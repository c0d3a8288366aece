package taskqueue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
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
	res, err := rc.Offer(ctx, meshapi.OfferRequest{Wait: 5 * time.Second, Max: 3})
	if err != nil || len(res.Offers) != 3 || len(res.Claimed) != 0 {
		t.Fatalf("offers: %+v, %v", res, err)
	}
	offers := res.Offers
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
// four free slots and four pending runs claims the four with the request
// in which it asks for work: no separate claim, and one key on all four.
func TestRuntime_WithFreeSlotsClaimsSeveralRunsInOneRequest(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	var agent mesh.Agent
	p.Do(http.MethodPost, "/agent-accounts", map[string]any{"name": "four at once"}, &agent)
	var runs []mesh.TaskRun
	var ids []string
	for range 4 {
		r := p.CreateTask(agent.ID, "work")
		runs = append(runs, r)
		ids = append(ids, r.ID)
	}
	var mu sync.Mutex
	var claimMany int
	var first *meshapi.OfferRequest
	watch := func(op string, f func(*nats.Msg)) {
		sub, err := p.Conn().NC.Subscribe(bus.RuntimeSubjectPattern(op), f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	watch(bus.RuntimeOpClaimMany, func(*nats.Msg) {
		mu.Lock()
		claimMany++
		mu.Unlock()
	})
	watch(bus.RuntimeOpOffer, func(m *nats.Msg) {
		var req meshapi.OfferRequest
		if json.Unmarshal(m.Data, &req) == nil {
			mu.Lock()
			if first == nil {
				first = &req
			}
			mu.Unlock()
		}
	})
	if err := p.Conn().NC.Flush(); err != nil {
		t.Fatal(err)
	}
	meshtest.ConnectAgent(t, p, agent, meshtest.AgentOptions{Concurrency: 4})
	for _, r := range runs {
		p.WaitTask(r.ID, 30*time.Second, func(r mesh.TaskRun) bool { return r.Status == mesh.StatusCompleted })
	}
	mu.Lock()
	defer mu.Unlock()
	if first == nil || !first.Claim || first.Max != 4 || first.Key == "" {
		t.Fatalf("the runtime's first request for work was %+v, want a claiming request for 4 with a key", first)
	}
	if claimMany != 0 {
		t.Fatalf("the runtime sent %d separate claims, want none", claimMany)
	}
	if keys := claimKeys(t, p, ids); len(keys) != 1 || !keys[first.Key] {
		t.Fatalf("the four runs were claimed under keys %v, want all under the first request's %s", keys, first.Key)
	}
}

// TestCancel_TheRuntimeHoldingTheRunHearsOfItAtOnce: a runtime's request
// for cancels, waiting, is answered as soon as a run it holds is canceled,
// and names only that run (a pending run's cancel concerns no runtime); a
// request naming a run already canceled is answered at once.
func TestCancel_TheRuntimeHoldingTheRunHearsOfItAtOnce(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.HeartbeatTimeout, c.Lease = time.Minute, time.Minute })
	agent := p.CreateAgent("canceled")
	rt := p.OnlineRuntime(t, agent.ID)
	nc := p.RuntimeConn(t, rt)
	pending := p.CreateTask(agent.ID, "never claimed")
	held := p.CreateTask(agent.ID, "held")
	rc := meshapi.NewClient(nc).Runtime(agent.ID, rt.RuntimeID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := rc.Claim(ctx, meshapi.ClaimRequest{TaskRunID: held.ID, Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		res *meshapi.CanceledResponse
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := rc.Canceled(ctx, meshapi.CanceledRequest{TaskRunIDs: []string{held.ID}, Wait: 25 * time.Second})
		answered <- answer{res, err}
	}()
	// The request waits: nothing is canceled yet.
	select {
	case a := <-answered:
		t.Fatalf("the request for cancels was answered before any cancel: %+v, %v", a.res, a.err)
	default:
	}
	for _, r := range []mesh.TaskRun{pending, held} {
		p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + r.ID + "/cancel", Owner: true, JSON: map[string]any{}}).Expect(t, http.StatusOK)
	}
	a := <-answered
	if a.err != nil || a.res == nil || len(a.res.Canceled) != 1 || a.res.Canceled[0] != held.ID {
		t.Fatalf("the request for cancels answered %+v, %v; want the held run %s alone", a.res, a.err, held.ID)
	}
	res, err := rc.Canceled(ctx, meshapi.CanceledRequest{TaskRunIDs: []string{held.ID, pending.ID}, Wait: 25 * time.Second})
	if err != nil || len(res.Canceled) != 1 || res.Canceled[0] != held.ID {
		t.Fatalf("asked again about the canceled run: %+v, %v; want it named at once", res, err)
	}
}

// TestCancel_WaitingRequestsForCancelsHoldUpNoOtherRequest: requests for
// cancels wait long, like requests for work: however many runtimes keep
// one waiting, the task queue still answers everything else at once.
func TestCancel_WaitingRequestsForCancelsHoldUpNoOtherRequest(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.HeartbeatTimeout, c.Lease = time.Minute, time.Minute })
	agent := p.CreateAgent("many waits")
	rt := p.OnlineRuntime(t, agent.ID)
	nc := p.RuntimeConn(t, rt)
	rc := meshapi.NewClient(nc).Runtime(agent.ID, rt.RuntimeID)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waiting, cancelWaits := context.WithCancel(ctx)
	defer cancelWaits()
	// As many as the service handles at once (bus.ServiceSpec.Concurrency).
	const waits = 256
	for range waits {
		// Each asks again when its wait ends, as a runtime does.
		go func() {
			for waiting.Err() == nil {
				_, _ = rc.Canceled(waiting, meshapi.CanceledRequest{Wait: 20 * time.Second})
			}
		}()
	}
	var last error
	// They all wait once one more is refused: a runtime may keep only so
	// many waiting.
	meshtest.Eventually(t, 20*time.Second, func() bool {
		octx, ocancel := context.WithTimeout(ctx, 2*time.Second)
		defer ocancel()
		_, err := rc.Canceled(octx, meshapi.CanceledRequest{Wait: time.Second})
		last = err
		return errors.Is(err, mesh.ErrRateLimited)
	}, func() string { return fmt.Sprintf("the requests for cancels never all waited: %v", last) })
	hctx, hcancel := context.WithTimeout(ctx, 5*time.Second)
	defer hcancel()
	if _, err := rc.Hello(hctx); err != nil {
		t.Fatalf("with %d requests for cancels waiting, a hello was not answered: %v", waits, err)
	}
}

// TestClaimMany_ARunAlreadyClaimedByAnotherRequestOfTheRuntimeIsRefused:
// a claiming request sent again (its answer was lost) answers with what it
// claimed, but a different request of the same runtime, under another key,
// that names a run the first already claimed (a copy of the task queue
// whose index has not seen that claim yet offered it as pending) is
// refused it: the runtime holds the run through the first request (its
// answer, or the recovery of its key), and handing it out again would
// start it twice.
func TestClaimMany_ARunAlreadyClaimedByAnotherRequestOfTheRuntimeIsRefused(t *testing.T) {
	t.Parallel()
	p, agent, rt, rc, ctx := heldRuntime(t, "claimed once")

	run := p.CreateTask(agent.ID, "one")
	first := meshapi.ClaimManyRequest{Claims: []meshapi.ClaimRequest{{TaskRunID: run.ID, Attempt: 1}}, Key: mesh.NewID()}
	res, err := rc.ClaimMany(ctx, first)
	if err != nil || len(res.Claimed) != 1 || res.Claimed[0].ID != run.ID {
		t.Fatalf("the first claim: %+v, %v", res, err)
	}
	// The same request again: the same run.
	if again, err := rc.ClaimMany(ctx, first); err != nil || len(again.Claimed) != 1 || again.Claimed[0].ID != run.ID {
		t.Fatalf("the first claim sent again: %+v, %v; want %s", again, err, run.ID)
	}
	// Another request naming it: refused.
	other, err := rc.ClaimMany(ctx, meshapi.ClaimManyRequest{Claims: []meshapi.ClaimRequest{{TaskRunID: run.ID, Attempt: 1}}, Key: mesh.NewID()})
	if err != nil {
		t.Fatal(err)
	}
	if len(other.Claimed) != 0 || len(other.Refused) != 1 || other.Refused[0].TaskRunID != run.ID || other.Refused[0].Error.Code != mesh.CodeInvalidTransition {
		t.Fatalf("another request naming the run claimed %d and refused %+v; want it refused as INVALID_TRANSITION", len(other.Claimed), other.Refused)
	}
	if got := p.GetTask(run.ID); got.Status != mesh.StatusRunning || got.RuntimeID != rt.RuntimeID || got.Attempt != 1 {
		t.Fatalf("the run is %s by %q, attempt %d; want the first claim's", got.Status, got.RuntimeID, got.Attempt)
	}
}
