package runtimeengine_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/internal/testkit/tcplink"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestNATSTransport_RunsClaimedForALostAnswerAreTakenUpOrGivenBack: a run
// claimed by a request whose answer never reached the runtime is what its
// next request for work returns, and one the runtime still has not taken
// up when it closes goes back to pending at once, not when its lease ends;
// none is handed out twice.
func TestNATSTransport_RunsClaimedForALostAnswerAreTakenUpOrGivenBack(t *testing.T) {
	t.Parallel()
	// Leases long enough that none ends within the test: what it sees of
	// the runs is what the transport did.
	p := meshtest.StartPlatform(t, longLeases)
	agent := p.CreateAgent("lost answers")
	att := p.OnlineRuntime(t, agent.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr, _ := dialNATS(ctx, t, p.NATSURL(), att)
	claimLost := func(text string) mesh.TaskRun { return claimForLostAnswer(ctx, t, p, att, tr, text) }

	taken := claimLost("taken up")
	runs, err := tr.NextUpTo(ctx, 4)
	if err != nil || len(runs) != 1 || runs[0].ID != taken.ID || runs[0].Status != mesh.StatusRunning || runs[0].Attempt != 1 {
		t.Fatalf("the next request for work returned %+v, %v; want %s, claimed for the lost answer", runs, err, taken.ID)
	}

	// Asked about again while the lost request could still claim, it
	// never hands the same run out twice.
	if runs, err := tr.NextUpTo(ctx, 4); err != nil || len(runs) != 0 {
		t.Fatalf("the request for work after that returned %+v, %v; want nothing (the wait ends empty)", runs, err)
	}

	given := claimLost("given back")
	tr.Close()
	if why := givenBack(p, given.ID); why != "" {
		t.Fatalf("after the transport closed, claimed for a lost answer: %s", why)
	}
	if got := p.GetTask(taken.ID); got.Status != mesh.StatusRunning {
		t.Fatalf("the run the runtime took up is %s after it closed (%+v), want still running (its lease decides)", got.Status, got.Error)
	}
}

// TestNATSTransport_AnAnswerLostWithTheConnectionIsRecovered: the runtime's
// request for work claims a pending run, and its connection drops while the
// answer is on its way (a slow link, then a drop); once the runtime is back,
// its next requests for work return that run, once.
func TestNATSTransport_AnAnswerLostWithTheConnectionIsRecovered(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, longLeases)
	agent := p.CreateAgent("dropped answer")
	att := p.OnlineRuntime(t, agent.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr, link := dialNATSThroughLink(ctx, t, p, att)
	defer tr.Close()

	dropTheAnswerThenRecover(ctx, t, p, tr, link, agent.ID, att.RuntimeID)
}

// TestNATSTransport_ARefusedRequestForWorkIsNotAskedAbout: a request for
// work the task queue refused before claiming anything (the runtime is
// offline) leaves nothing to ask about again, so a refused runtime does
// not send a recover before each of its next requests.
func TestNATSTransport_ARefusedRequestForWorkIsNotAskedAbout(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("never online")
	att := p.Attach(agent.ID) // no heartbeat: offline
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr, _ := dialNATS(ctx, t, p.NATSURL(), att)
	defer tr.Close()
	_, err := tr.NextUpTo(ctx, 1)
	if !errors.Is(err, mesh.ErrRuntimeOffline) {
		t.Fatalf("request for work of an offline runtime: %v, want RUNTIME_OFFLINE", err)
	}
	if n := runtimeengine.LostAnswers(tr); n != 0 {
		t.Fatalf("a refused request left %d answers to ask about", n)
	}
}

// TestNATSTransport_AClaimStoredLongAfterItsRequestIsStillTakenUp: while
// the platform's store is unavailable (a node lost, leaders being elected)
// the task queue keeps trying to store a claim for as long as it works on
// the request, which can be well past the request's own wait. The runtime
// whose answer was lost keeps asking about it for that long, so a claim
// stored late is taken up, not left held by nobody until its lease ends
// (which fails the run RUNTIME_LOST when it has no attempts left).
func TestNATSTransport_AClaimStoredLongAfterItsRequestIsStillTakenUp(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, longLeases)
	agent := p.CreateAgent("late claim")
	att := p.OnlineRuntime(t, agent.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr, _ := dialNATS(ctx, t, p.NATSURL(), att)
	defer tr.Close()

	// The request was sent longer ago than its wait and the answer's
	// slack, and nothing is claimed under it yet.
	key := mesh.NewID()
	runtimeengine.LostAnswerSentAt(tr, key, time.Now().Add(-20*time.Second))
	if runs, err := tr.NextUpTo(ctx, 1); err != nil || len(runs) != 0 {
		t.Fatalf("the first request for work returned %+v, %v; want nothing", runs, err)
	}

	// Now the task queue stores the claim under that request's key.
	run := p.CreateTask(agent.ID, "claimed late")
	rc := p.RuntimeClient(t, att)
	res, err := rc.Offer(ctx, meshapi.OfferRequest{Wait: time.Second, Claim: true, Key: key})
	if err != nil || len(res.Claimed) != 1 || res.Claimed[0].ID != run.ID {
		t.Fatalf("claim of %s: %+v, %v", run.ID, res, err)
	}
	runs, err := tr.NextUpTo(ctx, 1)
	if err != nil || len(runs) != 1 || runs[0].ID != run.ID || runs[0].Attempt != 1 {
		t.Fatalf("the next request for work returned %+v, %v; want %s, claimed late for the lost answer", runs, err, run.ID)
	}
}

// TestNATSTransport_ALostAnswerIsAskedAboutUntilTheQuestionIsAnswered: the
// last time a lost answer is asked about (the request can claim nothing
// more) is the last only if the task queue answers; an ask that fails (the
// connection is down, the platform's store unavailable while a node is
// lost) is made again, so a run claimed under the key is taken up, not left
// held by nobody until its lease ends. Requests for work that could not be
// sent meanwhile do not take its place.
func TestNATSTransport_ALostAnswerIsAskedAboutUntilTheQuestionIsAnswered(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, longLeases)
	agent := p.CreateAgent("asked again")
	att := p.OnlineRuntime(t, agent.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr, link := dialNATSThroughLink(ctx, t, p, att)
	defer tr.Close()

	// A run claimed under a request sent long enough ago that it can
	// claim nothing more.
	run := p.CreateTask(agent.ID, "claimed, its answer lost")
	key := mesh.NewID()
	rc := p.RuntimeClient(t, att)
	res, err := rc.Offer(ctx, meshapi.OfferRequest{Wait: time.Second, Claim: true, Key: key})
	if err != nil || len(res.Claimed) != 1 || res.Claimed[0].ID != run.ID {
		t.Fatalf("claim of %s: %+v, %v", run.ID, res, err)
	}
	runtimeengine.LostAnswerSentAt(tr, key, time.Now().Add(-2*meshapi.MaxHandling))

	// The question cannot be asked: the connection is down. Nor can the
	// requests for work made meanwhile be sent, and those claimed nothing:
	// they are not kept to ask about (were they, they would push out the
	// one that did claim).
	link.SetCut(true)
	link.DropAll()
	for range 40 {
		down, stop := context.WithTimeout(ctx, 3*time.Second)
		runs, err := tr.NextUpTo(down, 1)
		stop()
		if err == nil || len(runs) != 0 {
			t.Fatalf("a request for work with the connection down returned %+v, %v; want an error", runs, err)
		}
	}
	// The one lost before, and at most the request in flight as the
	// connection dropped.
	if n := runtimeengine.LostAnswers(tr); n < 1 || n > 2 {
		t.Fatalf("after 40 requests for work that could not be sent, %d lost answers are kept to ask about; want the one lost before", n)
	}

	link.SetCut(false)
	var got []*mesh.TaskRun
	meshtest.Eventually(t, 30*time.Second, func() bool {
		runs, _ := tr.NextUpTo(ctx, 1)
		got = append(got, runs...)
		return len(got) > 0
	}, func() string { return "the run claimed for the lost answer never came back" })
	if len(got) != 1 || got[0].ID != run.ID || got[0].Attempt != 1 {
		t.Fatalf("recovered %+v, want %s, attempt 1", got, run.ID)
	}
}

// TestNATSTransport_AClaimStoredWhileTheRuntimeWaitsForWorkIsTakenUpBeforeItsLeaseEnds:
// the runtime asked about a lost answer (nothing was claimed under it yet)
// and went on to wait for work, as long as a2a-runtime start waits; the
// claim is stored meanwhile. The runtime takes the run up while its lease
// runs, not after its wait: a runtime that keeps a lost answer to ask
// about asks again within moments.
func TestNATSTransport_AClaimStoredWhileTheRuntimeWaitsForWorkIsTakenUpBeforeItsLeaseEnds(t *testing.T) {
	t.Parallel()
	// Shorter than the wait of a request for work.
	const lease = 15 * time.Second
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = lease; c.HeartbeatTimeout = time.Minute })
	agent := p.CreateAgent("claimed while waiting")
	att := p.OnlineRuntime(t, agent.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// Dialled as a2a-runtime start dials: the shipped wait.
	tr, _, err := runtimeengine.DialNATS(ctx, runtimeengine.NATSConfig{
		URL: p.NATSURL(), Token: att.RuntimeToken, AgentID: att.AgentID, RuntimeID: att.RuntimeID,
		InboxPrefix: att.NATS.InboxPrefix,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	rc := p.RuntimeClient(t, att)

	// Named to another request first, the run is held back from the
	// runtime's own requests for work for a while.
	run := p.CreateTask(agent.ID, "claimed while the runtime waits")
	named, err := rc.Offer(ctx, meshapi.OfferRequest{Wait: time.Second})
	if err != nil || len(named.Offers) != 1 || named.Offers[0].TaskRunID != run.ID {
		t.Fatalf("offer: %+v, %v", named, err)
	}
	key := mesh.NewID()
	runtimeengine.LostAnswer(tr, key)
	loop, stop := context.WithCancel(ctx)
	defer stop()
	got := make(chan []*mesh.TaskRun, 16)
	go func() {
		for loop.Err() == nil {
			if runs, _ := tr.NextUpTo(loop, 1); len(runs) > 0 {
				got <- runs
			}
		}
	}()
	// It asked about the key (nothing yet) and waits for work.
	p.WaitOffersWaiting(1)
	claimed, err := rc.ClaimMany(ctx, meshapi.ClaimManyRequest{Claims: []meshapi.ClaimRequest{{TaskRunID: run.ID, Attempt: named.Offers[0].Attempt}}, Key: key})
	if err != nil || len(claimed.Claimed) != 1 {
		t.Fatalf("claim under the lost answer's key: %+v, %v", claimed, err)
	}
	select {
	case runs := <-got:
		if len(runs) != 1 || runs[0].ID != run.ID || runs[0].Attempt != 1 {
			t.Fatalf("took up %+v, want %s, attempt 1", runs, run.ID)
		}
	case <-time.After(2 * lease):
		t.Fatalf("the run claimed under the lost answer's key was not taken up; it is now %s", p.GetTask(run.ID).Status)
	}
	if r := p.GetTask(run.ID); r.Status != mesh.StatusRunning || r.RuntimeID != att.RuntimeID || r.Attempt != 1 {
		t.Fatalf("the run is %s held by %q, attempt %d; want still the claim made under the key (its lease ran out?)", r.Status, r.RuntimeID, r.Attempt)
	}
}

// dialNATSThroughLink dials the platform's NATS through a link the test
// can slow, cut and drop; the link closes with the test.
func dialNATSThroughLink(ctx context.Context, t *testing.T, p *meshtest.Platform, att meshtest.Attached) (runtimeengine.Transport, *tcplink.Link) {
	t.Helper()
	link, err := tcplink.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	u, err := url.Parse(p.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	link.SetTarget(u.Host)
	tr, _ := dialNATS(ctx, t, "nats://"+link.Addr(), att)
	return tr, link
}

// TestHTTPTransport_AnAnswerLostWithTheConnectionIsRecovered: over the REST
// API too, a pull claims a pending run and the connection drops while the
// answer is on its way; once the runtime is back, its next pulls return
// that run, once, rather than leave it claimed by nobody until its lease
// ends.
func TestHTTPTransport_AnAnswerLostWithTheConnectionIsRecovered(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, longLeases)
	agent := p.CreateAgent("dropped pull")
	att := p.OnlineRuntime(t, agent.ID)
	link, err := tcplink.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	u, err := url.Parse(p.APIBase)
	if err != nil {
		t.Fatal(err)
	}
	link.SetTarget(u.Host)
	tr := dialHTTP(t, "http://"+link.Addr()+u.Path, att)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	dropTheAnswerThenRecover(ctx, t, p, tr, link, agent.ID, att.RuntimeID)
	// Asked about again while the lost pull could still claim, it never
	// hands the same run out twice.
	if runs, err := tr.NextUpTo(ctx, 1); err != nil || len(runs) != 0 {
		t.Fatalf("the pull after that returned %+v, %v; want nothing", runs, err)
	}
}

// dropTheAnswerThenRecover creates a run of agentID, has tr ask for work
// through link, which delays the answer claiming the run, then drops it;
// tr's next requests for work must return that run, once, still held by
// runtimeID under its first claim.
func dropTheAnswerThenRecover(ctx context.Context, t *testing.T, p *meshtest.Platform, tr runtimeengine.Transport, link *tcplink.Link, agentID, runtimeID string) mesh.TaskRun {
	t.Helper()
	run := p.CreateTask(agentID, "its answer is lost")
	link.SetDelay(2 * time.Second)
	first := make(chan []*mesh.TaskRun, 1)
	go func() {
		runs, _ := tr.NextUpTo(ctx, 1)
		first <- runs
	}()
	// Claimed on the platform, its answer still crossing the slow link.
	p.WaitTask(run.ID, 20*time.Second, func(r mesh.TaskRun) bool { return r.Status == mesh.StatusRunning })
	link.SetDelay(0)
	link.DropAll()
	if runs := <-first; len(runs) != 0 {
		t.Fatalf("the request whose answer was dropped returned %v", runs)
	}
	var got []*mesh.TaskRun
	meshtest.Eventually(t, 20*time.Second, func() bool {
		runs, _ := tr.NextUpTo(ctx, 1)
		got = append(got, runs...)
		return len(got) > 0
	}, func() string { return "the run claimed for the dropped answer never came back" })
	if len(got) != 1 || got[0].ID != run.ID || got[0].Status != mesh.StatusRunning || got[0].Attempt != 1 {
		t.Fatalf("recovered %+v, want %s running, attempt 1", got, run.ID)
	}
	if r := p.GetTask(run.ID); r.Status != mesh.StatusRunning || r.RuntimeID != runtimeID || r.Attempt != 1 {
		t.Fatalf("the run is %s held by %q, attempt %d; want still the first claim", r.Status, r.RuntimeID, r.Attempt)
	}
	return run
}

// TestTransports_RunsRecoveredBeyondTheFreeSlotsAreGivenBack: the runs
// claimed for answers that did not come can be more than the engine asks
// for now (several requests lost while a node was down, each claiming up
// to the slots free then). A request for up to n runs returns no more than
// n, over either transport, and gives the rest back to pending at once:
// handed to the engine they would run beyond its concurrency (the adapter
// refuses those), and kept for later they would wait with their leases
// unrenewed.
func TestTransports_RunsRecoveredBeyondTheFreeSlotsAreGivenBack(t *testing.T) {
	onEachTransport(t, "more recovered than free", func(ctx context.Context, t *testing.T, p *meshtest.Platform, att meshtest.Attached, tr runtimeengine.Transport) {
		claimed := map[string]bool{}
		for i := range 3 {
			claimed[claimForLostAnswer(ctx, t, p, att, tr, fmt.Sprintf("claimed for lost answer %d", i)).ID] = true
		}

		runs, err := tr.NextUpTo(ctx, 1)
		if err != nil || len(runs) != 1 || !claimed[runs[0].ID] {
			t.Fatalf("a request for up to 1 run returned %+v, %v; want one of the runs claimed for the lost answers", runs, err)
		}
		delete(claimed, runs[0].ID)
		for id := range claimed {
			if why := givenBack(p, id); why != "" {
				t.Errorf("recovered beyond the one asked for: %s", why)
			}
		}
	})
}

// TestTransports_RunsClaimedForALostAnswerAreGivenBackAfterGoodbye: a
// stopping runtime says goodbye (the platform shows it offline at once)
// and then closes its transport, which gives back the runs claimed for
// answers it lost. Being offline must not keep it from asking for them:
// a draining runtime's abandoned request for work may claim a run created
// during the drain, which would otherwise stay held by nobody until its
// lease ended, and fail then.
func TestTransports_RunsClaimedForALostAnswerAreGivenBackAfterGoodbye(t *testing.T) {
	onEachTransport(t, "drained", func(ctx context.Context, t *testing.T, p *meshtest.Platform, att meshtest.Attached, tr runtimeengine.Transport) {
		run := claimForLostAnswer(ctx, t, p, att, tr, "created during the drain")

		if err := tr.Goodbye(ctx); err != nil {
			t.Fatal(err)
		}
		tr.Close()
		if why := givenBack(p, run.ID); why != "" {
			t.Fatalf("after goodbye and close, claimed for a lost answer: %s", why)
		}
	})
}

// claimForLostAnswer creates a run of att's agent and claims it for att's
// runtime on another connection, under a key tr is told it lost the
// answer to, as a reconnect at the wrong moment leaves a claim.
func claimForLostAnswer(ctx context.Context, t *testing.T, p *meshtest.Platform, att meshtest.Attached, tr runtimeengine.Transport, text string) mesh.TaskRun {
	t.Helper()
	run := p.CreateTask(att.AgentID, text)
	key := mesh.NewID()
	res, err := p.RuntimeClient(t, att).Offer(ctx, meshapi.OfferRequest{Wait: 5 * time.Second, Max: 1, Claim: true, Key: key})
	if err != nil || len(res.Claimed) != 1 || res.Claimed[0].ID != run.ID {
		t.Fatalf("claim of %s: %+v, %v", run.ID, res, err)
	}
	runtimeengine.LostAnswer(tr, key)
	return run
}

// TestTransports_ARunClaimedAfterItsLostAnswerWasGivenUpIsGivenBackByTheHeartbeat:
// the runtime asked about a lost answer until the request could claim
// nothing more, and nothing had been claimed under it. The claim was
// stored after all (a write the store took up again after a node was
// lost). The runtime does not hold the run and will not ask for it again:
// its next heartbeat names the key it gave up, and the task queue gives
// the run back to pending, attempt undone, instead of leaving it to fail
// when its lease ends. A run the runtime took up under such a key is its
// own, and a run held under a key the runtime did not give up (an earlier
// process's claim) is left to its lease, as before.
func TestTransports_ARunClaimedAfterItsLostAnswerWasGivenUpIsGivenBackByTheHeartbeat(t *testing.T) {
	onEachTransport(t, "claimed late", func(ctx context.Context, t *testing.T, p *meshtest.Platform, att meshtest.Attached, tr runtimeengine.Transport) {
		rc := p.RuntimeClient(t, att)

		// An earlier process's claim, under a key this one never sent.
		earlier := p.CreateTask(att.AgentID, "claimed by an earlier process")
		if res, err := rc.Offer(ctx, meshapi.OfferRequest{Wait: 5 * time.Second, Max: 1, Claim: true, Key: mesh.NewID()}); err != nil || len(res.Claimed) != 1 {
			t.Fatalf("claim of %s: %+v, %v", earlier.ID, res, err)
		}

		// Three lost answers, asked about once their requests could claim
		// nothing more, and so asked about no more: under one a run was
		// claimed, and the runtime takes it up; under the others nothing
		// is held yet.
		takenKey, key, lastKey := mesh.NewID(), mesh.NewID(), mesh.NewID()
		taken := p.CreateTask(att.AgentID, "taken up under a key given up")
		if res, err := rc.Offer(ctx, meshapi.OfferRequest{Wait: 5 * time.Second, Max: 1, Claim: true, Key: takenKey}); err != nil || len(res.Claimed) != 1 || res.Claimed[0].ID != taken.ID {
			t.Fatalf("claim of %s: %+v, %v", taken.ID, res, err)
		}
		runtimeengine.LostAnswerSentAt(tr, takenKey, time.Now().Add(-2*meshapi.MaxHandling))
		runtimeengine.LostAnswerSentAt(tr, key, time.Now().Add(-2*meshapi.MaxHandling))
		runtimeengine.LostAnswerSentAt(tr, lastKey, time.Now().Add(-2*meshapi.MaxHandling))
		if runs, err := tr.NextUpTo(ctx, 1); err != nil || len(runs) != 1 || runs[0].ID != taken.ID {
			t.Fatalf("a request for work returned %+v, %v; want %s, claimed for a lost answer", runs, err, taken.ID)
		}

		late := p.CreateTask(att.AgentID, "claimed under a key given up")
		if res, err := rc.Offer(ctx, meshapi.OfferRequest{Wait: 5 * time.Second, Max: 1, Claim: true, Key: key}); err != nil || len(res.Claimed) != 1 || res.Claimed[0].ID != late.ID {
			t.Fatalf("claim of %s: %+v, %v", late.ID, res, err)
		}

		// The heartbeat does not list the run taken up either, as one
		// sent before the engine starts it would not.
		if err := tr.Heartbeat(ctx, meshapi.HeartbeatRequest{RunningTaskRunIDs: []string{}}); err != nil {
			t.Fatal(err)
		}
		meshtest.Eventually(t, 20*time.Second, func() bool { return givenBack(p, late.ID) == "" }, func() string {
			return "claimed under a key its runtime gave up: " + givenBack(p, late.ID)
		})
		// The task queue handles one heartbeat at a time: once the next
		// has given back a run claimed after the first was handled, the
		// first has decided on every run the runtime held.
		res, err := rc.Offer(ctx, meshapi.OfferRequest{Wait: 5 * time.Second, Max: 1, Claim: true, Key: lastKey})
		if err != nil || len(res.Claimed) != 1 {
			t.Fatalf("claim under the last key given up: %+v, %v", res, err)
		}
		if err := tr.Heartbeat(ctx, meshapi.HeartbeatRequest{RunningTaskRunIDs: []string{}}); err != nil {
			t.Fatal(err)
		}
		meshtest.Eventually(t, 20*time.Second, func() bool { return givenBack(p, res.Claimed[0].ID) == "" }, func() string {
			return "claimed under a key its runtime gave up, by the next heartbeat: " + givenBack(p, res.Claimed[0].ID)
		})
		if e := p.GetTask(earlier.ID); e.Status != mesh.StatusRunning || e.RuntimeID != att.RuntimeID {
			t.Errorf("run %s, held under a key this process never sent, is %s, held by %q; want left running to its lease", earlier.ID, e.Status, e.RuntimeID)
		}
		if e := p.GetTask(taken.ID); e.Status != mesh.StatusRunning || e.RuntimeID != att.RuntimeID || e.Attempt != 1 {
			t.Errorf("run %s, taken up under a key given up after, is %s, attempt %d, held by %q; want running, attempt 1, by its runtime", taken.ID, e.Status, e.Attempt, e.RuntimeID)
		}
	})
}

// TestTransports_ALostClaimIsGivenBackWhileTheRuntimeAsksForNoWork: a
// runtime asks about its lost answers before each request for work, and it
// requests work only when it has a free slot. One whose slots are all busy
// (its reports held up while the store elects a leader, or long tasks)
// must not leave a run claimed for a lost answer unfound meanwhile, its
// lease running unrenewed: the transport asks on its own, and gives the run
// back to pending for another runtime (or this one, later) to claim.
func TestTransports_ALostClaimIsGivenBackWhileTheRuntimeAsksForNoWork(t *testing.T) {
	onEachTransport(t, "busy", func(ctx context.Context, t *testing.T, p *meshtest.Platform, att meshtest.Attached, tr runtimeengine.Transport) {
		run := claimForLostAnswer(ctx, t, p, att, tr, "claimed while every slot is busy")

		meshtest.Eventually(t, 20*time.Second, func() bool { return givenBack(p, run.ID) == "" }, func() string {
			return "claimed for a lost answer of a runtime asking for no work: " + givenBack(p, run.ID)
		})
		if n := runtimeengine.LostAnswers(tr); n != 1 {
			t.Errorf("%d lost answers kept after the give-back; want the one still asked about until its request can claim nothing more", n)
		}
	})
}

// onEachTransport runs test once for each transport, in parallel, each
// against a platform of its own with long leases, with an agent named
// name, its runtime online, and the transport dialled as a2a-runtime
// start dials it.
func onEachTransport(t *testing.T, name string, test func(ctx context.Context, t *testing.T, p *meshtest.Platform, att meshtest.Attached, tr runtimeengine.Transport)) {
	t.Parallel()
	for _, transport := range []string{runtimeengine.ModeNATS, runtimeengine.ModeHTTP} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			p := meshtest.StartPlatform(t, longLeases)
			att := p.OnlineRuntime(t, p.CreateAgent(name).ID)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			test(ctx, t, p, att, dialTransport(ctx, t, p, att, transport))
		})
	}
}

// givenBack says how run id differs from a run given back to pending,
// its attempt undone and held by none ("" when it does not).
func givenBack(p *meshtest.Platform, id string) string {
	got := p.GetTask(id)
	if got.Status == mesh.StatusPending && got.Attempt == 0 && got.RuntimeID == "" {
		return ""
	}
	return fmt.Sprintf("run %s is %s, attempt %d, held by %q; want pending again, attempt 0, held by none", id, got.Status, got.Attempt, got.RuntimeID)
}
