package taskqueue_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestComplete_TakeClaimsTheNextPendingRunsForTheRuntime: a completion that
// says how many runs its runtime may take claims up to that many pending
// runs of the agent for it, oldest first, under its key, and answers with
// them: never more than it said, none when it says none or none is
// pending, none when the completion itself is refused (another attempt's),
// and a lost answer's runs are found again by the key.
func TestComplete_TakeClaimsTheNextPendingRunsForTheRuntime(t *testing.T) {
	t.Parallel()
	// No lease ends within the test.
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = time.Minute; c.HeartbeatTimeout = time.Minute })
	agent := p.CreateAgent("takes on complete")
	rt := p.OnlineRuntime(t, agent.ID)
	rc := meshapi.NewClient(p.RuntimeConn(t, rt)).Runtime(agent.ID, rt.RuntimeID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	hello, err := rc.Hello(ctx)
	if err != nil || !hello.TakesOnComplete {
		t.Fatalf("hello = %+v, %v; want it to say completions take runs", hello, err)
	}
	first := p.CreateTask(agent.ID, "first")
	res, err := rc.Offer(ctx, meshapi.OfferRequest{Wait: 5 * time.Second, Claim: true, Key: mesh.NewID()})
	if err != nil || len(res.Claimed) != 1 || res.Claimed[0].ID != first.ID {
		t.Fatalf("claim of the first run: %+v, %v", res, err)
	}
	next := []mesh.TaskRun{p.CreateTask(agent.ID, "b"), p.CreateTask(agent.ID, "c"), p.CreateTask(agent.ID, "d")}
	p.WaitTask(next[2].ID, 10*time.Second, meshtest.StatusIs(mesh.StatusPending))
	out := json.RawMessage(`{"text":"done"}`)
	complete := func(run mesh.TaskRun, attempt, take int, key string) (*meshapi.ReportAck, error) {
		return rc.Complete(ctx, meshapi.CompleteRequest{TaskRunID: run.ID, Attempt: attempt, Output: out, Take: take, Key: key})
	}
	claimedIDs := func(ack *meshapi.ReportAck) []string {
		var ids []string
		for _, r := range ack.Claimed {
			if r.Status != mesh.StatusRunning || r.RuntimeID != rt.RuntimeID || r.Attempt != 1 {
				t.Fatalf("claimed run %s is %s by %q, attempt %d", r.ID, r.Status, r.RuntimeID, r.Attempt)
			}
			ids = append(ids, r.ID)
		}
		return ids
	}

	// Bad takes are refused before anything changes.
	for _, bad := range []meshapi.CompleteRequest{
		{TaskRunID: first.ID, Attempt: 1, Output: out, Take: -1, Key: mesh.NewID()},
		{TaskRunID: first.ID, Attempt: 1, Output: out, Take: meshapi.MaxOffers + 1, Key: mesh.NewID()},
		{TaskRunID: first.ID, Attempt: 1, Output: out, Take: 1},
		{TaskRunID: first.ID, Attempt: 1, Output: out, Take: 1, Key: "not an id!"},
	} {
		if _, err := rc.Complete(ctx, bad); mesh.AsError(err).Code != mesh.CodeInvalidRequest {
			t.Fatalf("complete %+v: %v, want INVALID_REQUEST", bad, err)
		}
	}
	if got := p.GetTask(first.ID); got.Status != mesh.StatusRunning {
		t.Fatalf("a refused completion left the run %s, want running", got.Status)
	}

	// Two of three, oldest first.
	key := mesh.NewID()
	ack, err := complete(first, 1, 2, key)
	if err != nil || ack.Status != mesh.StatusCompleted {
		t.Fatalf("complete with take 2: %+v, %v", ack, err)
	}
	if got := claimedIDs(ack); len(got) != 2 || got[0] != next[0].ID || got[1] != next[1].ID {
		t.Fatalf("complete with take 2 claimed %v, want %s and %s", got, next[0].ID, next[1].ID)
	}
	if ack.Instructions == nil {
		t.Fatal("the answer with claimed runs carries no instructions")
	}
	if got := p.GetTask(next[2].ID); got.Status != mesh.StatusPending {
		t.Fatalf("the third run is %s, want still pending (take was 2)", got.Status)
	}
	// The key finds them again, as a claiming offer's does.
	rec, err := rc.Offer(ctx, meshapi.OfferRequest{Recover: true, Key: key})
	if err != nil || len(rec.Claimed) != 2 {
		t.Fatalf("recover of the completion's key: %+v, %v; want its two runs", rec, err)
	}

	// Take 0 claims nothing.
	if ack, err := complete(next[0], 1, 0, ""); err != nil || len(ack.Claimed) != 0 {
		t.Fatalf("complete with take 0: %+v, %v; want no run claimed", ack, err)
	}
	// A completion of another attempt is refused, and claims nothing.
	if _, err := complete(next[1], 2, 1, mesh.NewID()); err == nil {
		t.Fatal("a completion of attempt 2 of a run at attempt 1 was taken")
	}
	if got := p.GetTask(next[2].ID); got.Status != mesh.StatusPending {
		t.Fatalf("after a refused completion the third run is %s, want still pending", got.Status)
	}
	// More asked than pending: what is pending.
	ack, err = complete(next[1], 1, 5, mesh.NewID())
	if err != nil {
		t.Fatal(err)
	}
	if got := claimedIDs(ack); len(got) != 1 || got[0] != next[2].ID {
		t.Fatalf("complete with take 5 and one pending claimed %v, want %s", got, next[2].ID)
	}
	// None pending: none.
	if ack, err := complete(next[2], 1, 1, mesh.NewID()); err != nil || len(ack.Claimed) != 0 || ack.Status != mesh.StatusCompleted {
		t.Fatalf("complete with take 1 and nothing pending: %+v, %v", ack, err)
	}
}

// TestComplete_ATakeAndAnOfferAtOnceNeverShareARun: a completion that
// takes and a claiming offer request of the runtime arrive at the same
// moment (its dispatch asking for work while one of its runs completes);
// the one pending run goes to one of them, once.
func TestComplete_ATakeAndAnOfferAtOnceNeverShareARun(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = time.Minute; c.HeartbeatTimeout = time.Minute })
	agent := p.CreateAgent("two paths")
	rt := p.OnlineRuntime(t, agent.ID)
	rc := meshapi.NewClient(p.RuntimeConn(t, rt)).Runtime(agent.ID, rt.RuntimeID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for round := range 5 {
		held := p.CreateTask(agent.ID, "held")
		res, err := rc.Offer(ctx, meshapi.OfferRequest{Wait: 5 * time.Second, Claim: true, Key: mesh.NewID()})
		if err != nil || len(res.Claimed) != 1 || res.Claimed[0].ID != held.ID {
			t.Fatalf("round %d: claim of %s: %+v, %v", round, held.ID, res, err)
		}
		last := p.CreateTask(agent.ID, "the one left")
		p.WaitTask(last.ID, 10*time.Second, meshtest.StatusIs(mesh.StatusPending))
		var ack *meshapi.ReportAck
		var offer *meshapi.OfferResponse
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			var err error
			if ack, err = rc.Complete(ctx, meshapi.CompleteRequest{TaskRunID: held.ID, Attempt: 1, Output: json.RawMessage(`{}`), Take: 1, Key: mesh.NewID()}); err != nil {
				t.Errorf("complete: %v", err)
			}
		}()
		go func() {
			defer wg.Done()
			var err error
			if offer, err = rc.Offer(ctx, meshapi.OfferRequest{Claim: true, Key: mesh.NewID()}); err != nil {
				t.Errorf("offer: %v", err)
			}
		}()
		wg.Wait()
		if t.Failed() {
			return
		}
		if n := len(ack.Claimed) + len(offer.Claimed); n != 1 {
			t.Fatalf("round %d: the completion claimed %+v and the offer %+v, want the one pending run, once", round, ack.Claimed, offer.Claimed)
		}
		got := p.GetTask(last.ID)
		if got.Status != mesh.StatusRunning || got.Attempt != 1 {
			t.Fatalf("round %d: the last run is %s at attempt %d, want running at attempt 1", round, got.Status, got.Attempt)
		}
		if _, err := rc.Complete(ctx, meshapi.CompleteRequest{TaskRunID: last.ID, Attempt: 1, Output: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestComplete_SentAgainAnswersWhatItsFirstTryClaimed: a completion that
// takes is sent again, with its key, when its answer did not come (the bus
// client sends an idempotent request again while a node is lost). The
// repeat answers with the runs the first try claimed, which the runtime
// knows of only through it, and claims no others: answering with new runs
// instead left the first try's claimed by nobody until their leases ended.
func TestComplete_SentAgainAnswersWhatItsFirstTryClaimed(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = time.Minute; c.HeartbeatTimeout = time.Minute })
	agent := p.CreateAgent("completion sent again")
	rt := p.OnlineRuntime(t, agent.ID)
	rc := meshapi.NewClient(p.RuntimeConn(t, rt)).Runtime(agent.ID, rt.RuntimeID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	first := p.CreateTask(agent.ID, "first")
	res, err := rc.Offer(ctx, meshapi.OfferRequest{Wait: 5 * time.Second, Claim: true, Key: mesh.NewID()})
	if err != nil || len(res.Claimed) != 1 || res.Claimed[0].ID != first.ID {
		t.Fatalf("claim of the first run: %+v, %v", res, err)
	}
	next := []mesh.TaskRun{p.CreateTask(agent.ID, "b"), p.CreateTask(agent.ID, "c"), p.CreateTask(agent.ID, "d")}
	p.WaitTask(next[2].ID, 10*time.Second, meshtest.StatusIs(mesh.StatusPending))
	req := meshapi.CompleteRequest{TaskRunID: first.ID, Attempt: 1, Output: json.RawMessage(`{"text":"done"}`), Take: 1, Key: mesh.NewID()}
	ack, err := rc.Complete(ctx, req)
	if err != nil || len(ack.Claimed) != 1 || ack.Claimed[0].ID != next[0].ID {
		t.Fatalf("the first try: %+v, %v; want %s claimed", ack, err, next[0].ID)
	}
	// Its answer is lost: the same request again.
	again, err := rc.Complete(ctx, req)
	if err != nil || again.Status != mesh.StatusCompleted {
		t.Fatalf("the completion sent again: %+v, %v", again, err)
	}
	if len(again.Claimed) != 1 || again.Claimed[0].ID != next[0].ID || again.Claimed[0].Attempt != 1 {
		var ids []string
		for _, r := range again.Claimed {
			ids = append(ids, r.ID)
		}
		t.Fatalf("the completion sent again answered with %v; want %s, which its first try claimed", ids, next[0].ID)
	}
	for _, r := range next[1:] {
		if got := p.GetTask(r.ID); got.Status != mesh.StatusPending {
			t.Fatalf("run %s is %s after the repeat; want pending (claimed by nothing)", r.ID, got.Status)
		}
	}
}
