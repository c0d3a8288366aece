package taskqueue_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
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
	p, agent, rt, rc, ctx := heldRuntime(t, "claims at once")

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

// TestOffer_AGiveBackUnderAClaimsKeyYieldsToTheRuntimeThatAskedForTheRun:
// a run claimed for a request whose runtime left is given back under the
// request's key (the gateway does it for a pull), but once the runtime,
// back, has asked for the run under that key the give-back is refused and
// the run stays the runtime's; given back first, the run is no longer
// answered to the asking runtime.
func TestOffer_AGiveBackUnderAClaimsKeyYieldsToTheRuntimeThatAskedForTheRun(t *testing.T) {
	t.Parallel()
	p, agent, rt, rc, ctx := heldRuntime(t, "gives back under a key")
	claimUnder := func(key string) mesh.TaskRun {
		t.Helper()
		run := p.CreateTask(agent.ID, "claimed under "+key)
		res, err := rc.Offer(ctx, meshapi.OfferRequest{Max: 1, Claim: true, Key: key})
		if err != nil || len(res.Claimed) != 1 || res.Claimed[0].ID != run.ID {
			t.Fatalf("claim under %s: %+v, %v", key, res, err)
		}
		return res.Claimed[0]
	}
	recovered := func(key string) []mesh.TaskRun {
		t.Helper()
		res, err := rc.Offer(ctx, meshapi.OfferRequest{Recover: true, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		return res.Claimed
	}

	// Asked for first: the give-back is refused, again and again.
	key := mesh.NewID()
	run := claimUnder(key)
	for range 2 {
		if got := recovered(key); len(got) != 1 || got[0].ID != run.ID || got[0].Attempt != 1 {
			t.Fatalf("asked for under its key, the run answered %+v, want %s attempt 1", got, run.ID)
		}
	}
	err := rc.Release(ctx, meshapi.ReleaseRequest{TaskRunID: run.ID, Attempt: 1, Key: key})
	if e := mesh.AsError(err); e == nil || e.Code != mesh.CodeInvalidTransition || e.Status != mesh.StatusRunning {
		t.Fatalf("a give-back under the key of a run asked for: %v, want INVALID_TRANSITION (running)", err)
	}
	if got := p.GetTask(run.ID); got.Status != mesh.StatusRunning || got.RuntimeID != rt.RuntimeID || got.Attempt != 1 {
		t.Fatalf("the run asked for is %s held by %q, attempt %d; want still the runtime's", got.Status, got.RuntimeID, got.Attempt)
	}
	// It is the runtime's to report.
	if _, err := rc.Complete(ctx, meshapi.CompleteRequest{TaskRunID: run.ID, Attempt: 1, Output: json.RawMessage(`{"text":"done"}`)}); err != nil {
		t.Fatal(err)
	}

	// Given back first: the run is no longer the runtime's to take up.
	key = mesh.NewID()
	run = claimUnder(key)
	if err := rc.Release(ctx, meshapi.ReleaseRequest{TaskRunID: run.ID, Attempt: run.Attempt, Key: mesh.NewID()}); mesh.AsError(err).Code != mesh.CodeInvalidTransition {
		t.Fatalf("a give-back under another key: %v, want INVALID_TRANSITION", err)
	}
	if err := rc.Release(ctx, meshapi.ReleaseRequest{TaskRunID: run.ID, Attempt: run.Attempt, Key: key}); err != nil {
		t.Fatalf("a give-back under the key of a run not asked for: %v", err)
	}
	if got := recovered(key); len(got) != 0 {
		t.Fatalf("asked for after its give-back, the run answered %+v, want none", got)
	}
	if got := p.GetTask(run.ID); got.Status != mesh.StatusPending || got.Attempt != run.Attempt-1 {
		t.Fatalf("the run given back is %s, attempt %d; want pending, attempt %d", got.Status, got.Attempt, run.Attempt-1)
	}
	// A claim of it under a new key is a fresh claim: given back under
	// that key as any other.
	again := mesh.NewID()
	res, err := rc.Offer(ctx, meshapi.OfferRequest{Max: 1, Claim: true, Key: again})
	if err != nil || len(res.Claimed) != 1 || res.Claimed[0].ID != run.ID {
		t.Fatalf("claim again: %+v, %v", res, err)
	}
	if err := rc.Release(ctx, meshapi.ReleaseRequest{TaskRunID: run.ID, Attempt: res.Claimed[0].Attempt, Key: again}); err != nil {
		t.Fatalf("a give-back under the key of a fresh claim: %v", err)
	}
	if err := rc.Release(ctx, meshapi.ReleaseRequest{TaskRunID: run.ID, Attempt: 1, Key: "not a key"}); mesh.AsError(err).Code != mesh.CodeInvalidRequest {
		t.Fatalf("a give-back under a malformed key: %v, want INVALID_REQUEST", err)
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
