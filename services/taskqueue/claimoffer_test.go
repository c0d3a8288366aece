package taskqueue_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestOffer_AClaimingRequestClaimsThePendingRunsAndALostAnswerIsRecovered:
// a claiming offer request takes the runs pending when it arrives in one
// request, under its key, which stays out of the run as others see it; the
// same key asked with Recover gives back the runs it still holds, and no
// other key does.
func TestOffer_AClaimingRequestClaimsThePendingRunsAndALostAnswerIsRecovered(t *testing.T) {
	t.Parallel()
	// No lease ends within the test.
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = time.Minute; c.HeartbeatTimeout = time.Minute })
	agent := p.CreateAgent("claims at once")
	rt := p.OnlineRuntime(t, agent.ID)
	rc := p.RuntimeClient(t, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	runs := []mesh.TaskRun{p.CreateTask(agent.ID, "one"), p.CreateTask(agent.ID, "two")}
	key := mesh.NewID()
	res, err := rc.Offer(ctx, meshapi.OfferRequest{Wait: 5 * time.Second, Max: 3, Claim: true, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Offers) != 0 || len(res.Claimed) != 2 || res.Claimed[0].ID != runs[0].ID || res.Claimed[1].ID != runs[1].ID {
		t.Fatalf("claiming offer answered %+v, want %s and %s claimed in order", res, runs[0].ID, runs[1].ID)
	}
	for _, r := range res.Claimed {
		if r.Status != mesh.StatusRunning || r.RuntimeID != rt.RuntimeID || r.Attempt != 1 {
			t.Fatalf("claimed run %s is %s by %q, attempt %d", r.ID, r.Status, r.RuntimeID, r.Attempt)
		}
		if seen := p.GetTask(r.ID); seen.Status != mesh.StatusRunning || seen.ClaimKey != "" {
			t.Fatalf("run %s as the API shows it: %s, claim key %q (want running, no key)", r.ID, seen.Status, seen.ClaimKey)
		}
	}
	if res.Instructions == nil {
		t.Fatal("the claiming answer carries no instructions")
	}

	recovered := func(k string) []string {
		t.Helper()
		res, err := rc.Offer(ctx, meshapi.OfferRequest{Recover: true, Key: k})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Offers) != 0 {
			t.Fatalf("a recover named runs to claim: %+v", res.Offers)
		}
		var ids []string
		for _, r := range res.Claimed {
			ids = append(ids, r.ID)
		}
		return ids
	}
	if got := recovered(key); len(got) != 2 || got[0] != runs[0].ID || got[1] != runs[1].ID {
		t.Fatalf("recover answered %v, want both runs", got)
	}
	if got := recovered(mesh.NewID()); len(got) != 0 {
		t.Fatalf("recover of another key answered %v, want none", got)
	}
	if err := rc.Release(ctx, meshapi.ReleaseRequest{TaskRunID: runs[0].ID, Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	if got := recovered(key); len(got) != 1 || got[0] != runs[1].ID {
		t.Fatalf("recover after releasing %s answered %v, want only %s", runs[0].ID, got, runs[1].ID)
	}
	// Recover claims nothing new: the released run stays pending.
	if got := p.GetTask(runs[0].ID); got.Status != mesh.StatusPending {
		t.Fatalf("the released run is %s after a recover, want pending", got.Status)
	}

	for _, bad := range []meshapi.OfferRequest{
		{Claim: true},
		{Recover: true},
		{Claim: true, Key: "not an id!"},
		{Claim: true, Recover: true, Key: key},
	} {
		if _, err := rc.Offer(ctx, bad); mesh.AsError(err).Code != mesh.CodeInvalidRequest {
			t.Fatalf("offer %+v: %v, want INVALID_REQUEST", bad, err)
		}
	}
	// The delegation service's offers only name runs.
	if _, err := meshapi.NewClient(p.Conn().NC).DelegateOffer(ctx, meshapi.OfferRequest{Claim: true, Key: mesh.NewID()}); mesh.AsError(err).Code != mesh.CodeInvalidRequest {
		t.Fatalf("a claiming delegation offer: %v, want INVALID_REQUEST", err)
	}
}

// TestOffer_AClaimingRequestOnlyNamesTheRunsThatArriveWhileItWaits: a
// claiming request that finds nothing pending waits as an offer does, and
// names a run that arrives then without claiming it, so a runtime that
// gave up waiting leaves nothing held.
func TestOffer_AClaimingRequestOnlyNamesTheRunsThatArriveWhileItWaits(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("waits")
	rt := p.OnlineRuntime(t, agent.ID)
	rc := p.RuntimeClient(t, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	type answer struct {
		res *meshapi.OfferResponse
		err error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := rc.Offer(ctx, meshapi.OfferRequest{Wait: 20 * time.Second, Claim: true, Key: mesh.NewID()})
		got <- answer{res, err}
	}()
	p.WaitOffersWaiting(1)
	run := p.CreateTask(agent.ID, "later")
	a := <-got
	if a.err != nil {
		t.Fatal(a.err)
	}
	if len(a.res.Claimed) != 0 || len(a.res.Offers) != 1 || a.res.Offers[0].TaskRunID != run.ID || a.res.Offers[0].Attempt != 1 {
		t.Fatalf("the waiting claiming request answered %+v, want %s named, not claimed", a.res, run.ID)
	}
	if got := p.GetTask(run.ID); got.Status != mesh.StatusPending {
		t.Fatalf("the run named to a waiting request is %s, want pending", got.Status)
	}
}

// claimKeys reads the claim keys of runs as stored in the runs bucket
// (the API leaves them out).
func claimKeys(t *testing.T, p *meshtest.Platform, ids []string) map[string]bool {
	t.Helper()
	kv, err := p.Conn().JS.KeyValue(context.Background(), bus.BucketRuns)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, id := range ids {
		e, err := kv.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		var r mesh.TaskRun
		if err := json.Unmarshal(e.Value(), &r); err != nil {
			t.Fatal(err)
		}
		keys[r.ClaimKey] = true
	}
	return keys
}
