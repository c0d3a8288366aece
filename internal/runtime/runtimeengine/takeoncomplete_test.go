package runtimeengine_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/adapter"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/internal/runtime/adapterclient"
	"github.com/a2amesh/a2amesh/internal/runtime/ledger"
	"github.com/a2amesh/a2amesh/internal/runtime/profile"
	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/internal/testkit/tcplink"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestEngine_ABusyRuntimeTakesItsNextRunsWithItsCompletions: a runtime
// with runs waiting gets the next one in the answer to each completion,
// not through a request for work: it asks for work about twice (the first
// run, and the wait once none is left) instead of once per run, and works
// on every run once, with the ledger entries of a run claimed by a request
// for work. With a platform whose hello does not say that completions take
// runs (one of before they did), no completion says how many it takes and
// each run comes through a request for work, as before.
func TestEngine_ABusyRuntimeTakesItsNextRunsWithItsCompletions(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	for _, c := range []struct {
		name        string
		concurrency int
		oldPlatform bool
	}{
		{"one at a time", 1, false},
		{"two at a time", 2, false},
		{"platform without takes", 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			const runs = 8
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			agent := p.CreateAgent("busy " + c.name)
			prof := pair(ctx, t, p, agent.ID)
			// What the runtime asks the platform, seen on its subjects.
			var mu sync.Mutex
			offers, takes := 0, 0
			count := func(op string, f func(*nats.Msg)) {
				sub, err := p.Conn().NC.Subscribe(bus.RuntimeSubject(agent.ID, prof.RuntimeID, op), f)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = sub.Unsubscribe() })
			}
			count(bus.RuntimeOpOffer, func(m *nats.Msg) {
				var req meshapi.OfferRequest
				_ = json.Unmarshal(m.Data, &req)
				if !req.Recover {
					mu.Lock()
					offers++
					mu.Unlock()
				}
			})
			count(bus.RuntimeOpComplete, func(m *nats.Msg) {
				var req meshapi.CompleteRequest
				_ = json.Unmarshal(m.Data, &req)
				if req.Take > 0 {
					mu.Lock()
					takes++
					mu.Unlock()
				}
			})
			if err := p.Conn().NC.Flush(); err != nil {
				t.Fatal(err)
			}

			rt := startRuntime(ctx, t, prof, provider.Echo{}, runtimeengine.Options{Concurrency: c.concurrency, DrainGrace: time.Second})
			if c.oldPlatform {
				runtimeengine.HelloSaidNoTakes(rt.Transport())
			}

			// The runs wait before the runtime asks for work.
			var created []mesh.TaskRun
			for i := range runs {
				created = append(created, p.CreateTask(agent.ID, "run "+string(rune('a'+i))))
			}
			runCtx, stopRun := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- rt.Run(runCtx) }()
			for _, run := range created {
				got := p.WaitTask(run.ID, 30*time.Second, meshtest.StatusIs(mesh.StatusCompleted, mesh.StatusFailed))
				if got.Status != mesh.StatusCompleted || got.Attempt != 1 {
					t.Fatalf("run %s ended %s at attempt %d (%+v), want completed at its first attempt", run.ID, got.Status, got.Attempt, got.Error)
				}
			}
			stopRun()
			if err := <-done; err != nil {
				t.Fatalf("run: %v", err)
			}

			entries, err := rt.Ledger().Entries()
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]map[ledger.Event]int{}
			for _, e := range entries {
				if seen[e.TaskRunID] == nil {
					seen[e.TaskRunID] = map[ledger.Event]int{}
				}
				seen[e.TaskRunID][e.Event]++
			}
			for _, run := range created {
				for _, ev := range []ledger.Event{ledger.EventTaskPulled, ledger.EventTaskStarted, ledger.EventTaskCompleted} {
					if n := seen[run.ID][ev]; n != 1 {
						t.Fatalf("the ledger has %d %s for run %s (%v), want one", n, ev, run.ID, seen[run.ID])
					}
				}
			}

			mu.Lock()
			defer mu.Unlock()
			t.Logf("%d runs: %d requests for work, %d completions that took", runs, offers, takes)
			if c.oldPlatform {
				if takes != 0 || offers < runs {
					t.Fatalf("with a platform that does not take: %d completions took, %d requests for work for %d runs; want none took, a request per run", takes, offers, runs)
				}
				return
			}
			// The first run (or two), and the wait once none is left; a
			// run whose event was not yet stored when a completion asked
			// comes through a request for work.
			if takes == 0 || offers > 3 {
				t.Fatalf("%d requests for work for %d runs (%d completions took); want the runs to come with the completions", offers, runs, takes)
			}
		})
	}
}

// pair pairs a runtime with agentID as a2a-runtime pair does.
func pair(ctx context.Context, t *testing.T, p *meshtest.Platform, agentID string) profile.Profile {
	t.Helper()
	prof, err := runtimeengine.Pair(ctx, runtimeengine.PairRequest{
		Code: p.PairingCode(agentID), APIBase: p.APIBase, DeviceName: "test-device",
		LocalExecutor: profile.LocalExecutor{Type: "custom"},
	})
	if err != nil {
		t.Fatalf("pair: %v", err)
	}
	return prof
}

// startRuntime starts, as a2a-runtime start does, the runtime of prof over
// NATS, with an adapter of host on loopback and a ledger, and the options
// o sets (Concurrency, DrainGrace); it is closed when the test ends.
func startRuntime(ctx context.Context, t *testing.T, prof profile.Profile, host provider.Provider, o runtimeengine.Options) *runtimeengine.Runtime {
	t.Helper()
	token := secret.NewToken("a2aadp_")
	srv, err := adapter.New(adapter.Config{Provider: host, Workdir: t.TempDir(), AuthToken: token, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	ac, err := adapterclient.New("http://" + ln.Addr().String() + "/run-task")
	if err != nil {
		t.Fatal(err)
	}
	ac.SetAuthToken(token)
	api, err := restclient.New(prof.APIBase, restclient.WithRuntimeToken(prof.RuntimeToken))
	if err != nil {
		t.Fatal(err)
	}
	o.Profile, o.Mode, o.API, o.Adapter, o.LedgerDir, o.Logger = prof, runtimeengine.ModeNATS, api, ac, t.TempDir(), zerolog.Nop()
	rt, err := runtimeengine.Start(ctx, o)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(rt.Close)
	return rt
}

// heldHost holds each task until the test lets it end.
type heldHost struct {
	started chan string
	end     chan struct{}
}

func (heldHost) Name() string { return "held" }

func (h heldHost) Run(ctx context.Context, t *provider.Task, _ func(provider.Progress)) (*provider.Result, error) {
	h.started <- t.Request.TaskRunID
	select {
	case <-h.end:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &provider.Result{Output: map[string]any{"text": "done"}}, nil
}

// TestEngine_ADrainingRuntimeTakesNothingWithItsLastCompletion: a runtime
// told to stop while a run is in its adapter lets it finish, and that
// run's completion takes no run, though one waits: it stays pending, at
// its first attempt still to come, for another runtime.
func TestEngine_ADrainingRuntimeTakesNothingWithItsLastCompletion(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	agent := p.CreateAgent("drains")
	prof := pair(ctx, t, p, agent.ID)
	took := make(chan int, 4)
	sub, err := p.Conn().NC.Subscribe(bus.RuntimeSubject(agent.ID, prof.RuntimeID, bus.RuntimeOpComplete), func(m *nats.Msg) {
		var req meshapi.CompleteRequest
		_ = json.Unmarshal(m.Data, &req)
		took <- req.Take
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := p.Conn().NC.Flush(); err != nil {
		t.Fatal(err)
	}
	host := heldHost{started: make(chan string, 2), end: make(chan struct{})}
	rt := startRuntime(ctx, t, prof, host, runtimeengine.Options{Concurrency: 1, DrainGrace: 30 * time.Second})
	first := p.CreateTask(agent.ID, "in the adapter as the runtime stops")
	runCtx, stopRun := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(runCtx) }()
	select {
	case id := <-host.started:
		if id != first.ID {
			t.Fatalf("the adapter got %s, want %s", id, first.ID)
		}
	case <-ctx.Done():
		t.Fatal("the first run never reached the adapter")
	}
	waiting := p.CreateTask(agent.ID, "waits")
	p.WaitTask(waiting.ID, 10*time.Second, meshtest.StatusIs(mesh.StatusPending))
	stopRun()
	close(host.end)
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if got := p.GetTask(first.ID); got.Status != mesh.StatusCompleted {
		t.Fatalf("the run in the adapter ended %s (%+v), want completed within the drain", got.Status, got.Error)
	}
	if take := <-took; take != 0 {
		t.Fatalf("the draining runtime's completion asked for %d runs, want none", take)
	}
	if got := p.GetTask(waiting.ID); got.Status != mesh.StatusPending || got.Attempt != 0 || got.RuntimeID != "" {
		t.Fatalf("the waiting run is %s at attempt %d held by %q, want pending and never claimed", got.Status, got.Attempt, got.RuntimeID)
	}
}

// TestNATSTransport_RunsClaimedForALostCompletionAnswerAreTakenUp: a
// completion that takes claims the next run, and its answer is lost on a
// slow link; the completion, sent again, takes none, and the runtime's
// next request for work returns the run claimed for the lost answer,
// once, still at its first claim.
func TestNATSTransport_RunsClaimedForALostCompletionAnswerAreTakenUp(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = time.Minute; c.HeartbeatTimeout = time.Minute })
	agent := p.CreateAgent("lost completion answer")
	att := p.OnlineRuntime(t, agent.ID)
	link, err := tcplink.New()
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	u, err := url.Parse(p.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	link.SetTarget(u.Host)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr, _ := dialNATS(ctx, t, "nats://"+link.Addr(), att)
	defer tr.Close()
	taker, ok := tr.(runtimeengine.Taker)
	if !ok || !taker.TakesOnComplete() {
		t.Fatal("the NATS transport to this platform does not take runs with its completions")
	}

	held := p.CreateTask(agent.ID, "held")
	var run *mesh.TaskRun
	meshtest.Eventually(t, 20*time.Second, func() bool {
		run, _ = tr.Next(ctx)
		return run != nil
	}, func() string { return "the first run was never claimed" })
	if run.ID != held.ID {
		t.Fatalf("claimed %s, want %s", run.ID, held.ID)
	}
	next := p.CreateTask(agent.ID, "claimed for a lost answer")
	p.WaitTask(next.ID, 10*time.Second, meshtest.StatusIs(mesh.StatusPending))

	// A malformed completion is refused as it is without take (it is sent
	// again without it, as to a task queue copy from before completions
	// took runs), and claims nothing.
	bad := meshapi.CompleteRequest{TaskRunID: run.ID, Attempt: run.Attempt, Output: json.RawMessage(`["not an object"]`)}
	if runs, err := taker.CompleteTaking(ctx, bad, 1); !errors.Is(err, mesh.ErrInvalidRequest) || len(runs) != 0 {
		t.Fatalf("a malformed completion: %+v, %v; want INVALID_REQUEST and nothing claimed", runs, err)
	}
	if got := p.GetTask(next.ID); got.Status != mesh.StatusPending {
		t.Fatalf("after a malformed completion the waiting run is %s, want pending", got.Status)
	}

	link.SetDelay(2 * time.Second)
	// The request reaches the platform within its deadline (2 s), its
	// answer would come back after it (4 s).
	cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
	req := meshapi.CompleteRequest{TaskRunID: run.ID, Attempt: run.Attempt, Output: json.RawMessage(`{"text":"done"}`)}
	runs, err := taker.CompleteTaking(cctx, req, 1)
	ccancel()
	if err == nil || len(runs) != 0 {
		t.Fatalf("the completion whose answer is late returned %+v, %v; want no answer", runs, err)
	}
	p.WaitTask(next.ID, 20*time.Second, meshtest.StatusIs(mesh.StatusRunning))
	link.SetDelay(0)
	// Sent again, as a report whose answer did not come is.
	if runs, err := taker.CompleteTaking(ctx, req, 0); err != nil || len(runs) != 0 {
		t.Fatalf("the completion sent again: %+v, %v; want it taken, nothing claimed", runs, err)
	}
	if got := p.GetTask(held.ID); got.Status != mesh.StatusCompleted {
		t.Fatalf("the completed run is %s", got.Status)
	}
	got, err := tr.NextUpTo(ctx, 1)
	if err != nil || len(got) != 1 || got[0].ID != next.ID || got[0].Attempt != 1 {
		t.Fatalf("the next request for work returned %+v, %v; want %s, claimed for the lost answer", got, err, next.ID)
	}
	if again, err := tr.NextUpTo(ctx, 1); err != nil || len(again) != 0 {
		t.Fatalf("the request for work after that returned %+v, %v; want nothing", again, err)
	}
	if r := p.GetTask(next.ID); r.Status != mesh.StatusRunning || r.RuntimeID != att.RuntimeID || r.Attempt != 1 {
		t.Fatalf("the run is %s held by %q at attempt %d, want still its first claim", r.Status, r.RuntimeID, r.Attempt)
	}
}

// TestNATSTransport_AReconnectEndsTheWaitForACompletionsAnswer: a
// completion that took a run is on its way back when the connection drops
// (its node lost). The answer is gone with the connection; the runtime
// stops waiting for it when it reconnects, not when its own wait would
// end, and takes the run up while the run's lease still runs.
func TestNATSTransport_AReconnectEndsTheWaitForACompletionsAnswer(t *testing.T) {
	t.Parallel()
	const lease = 15 * time.Second
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = lease; c.HeartbeatTimeout = time.Minute })
	agent := p.CreateAgent("completion cut off")
	att := p.OnlineRuntime(t, agent.ID)
	link, err := tcplink.New()
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	u, err := url.Parse(p.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	link.SetTarget(u.Host)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tr, _ := dialNATS(ctx, t, "nats://"+link.Addr(), att)
	defer tr.Close()
	taker := tr.(runtimeengine.Taker)

	held := p.CreateTask(agent.ID, "held")
	var run *mesh.TaskRun
	meshtest.Eventually(t, 20*time.Second, func() bool {
		run, _ = tr.Next(ctx)
		return run != nil
	}, func() string { return "the first run was never claimed" })
	if run.ID != held.ID {
		t.Fatalf("claimed %s, want %s", run.ID, held.ID)
	}
	next := p.CreateTask(agent.ID, "claimed for an answer cut off")
	p.WaitTask(next.ID, 10*time.Second, meshtest.StatusIs(mesh.StatusPending))

	// The completion reaches the platform; its answer is slow to come
	// back, and the connection drops before it does. The wait it was
	// given is far longer than the lease.
	link.SetDelay(2 * time.Second)
	ended := make(chan error, 1)
	go func() {
		req := meshapi.CompleteRequest{TaskRunID: run.ID, Attempt: run.Attempt, Output: json.RawMessage(`{"text":"done"}`)}
		_, err := taker.CompleteTaking(ctx, req, 1)
		ended <- err
	}()
	p.WaitTask(next.ID, 20*time.Second, meshtest.StatusIs(mesh.StatusRunning))
	link.SetDelay(0)
	link.DropAll()
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the completion whose answer was cut off returned an answer")
		}
	case <-time.After(lease):
		t.Fatalf("the completion still waits for its answer a lease after its connection dropped; the run claimed for it is %s", p.GetTask(next.ID).Status)
	}
	var got []*mesh.TaskRun
	meshtest.Eventually(t, 20*time.Second, func() bool {
		runs, _ := tr.NextUpTo(ctx, 1)
		got = append(got, runs...)
		return len(got) > 0
	}, func() string { return "the run claimed for the answer cut off never came back" })
	if len(got) != 1 || got[0].ID != next.ID || got[0].Attempt != 1 {
		t.Fatalf("took up %+v, want %s, attempt 1", got, next.ID)
	}
	if r := p.GetTask(next.ID); r.Status != mesh.StatusRunning || r.RuntimeID != att.RuntimeID || r.Attempt != 1 {
		t.Fatalf("the run is %s held by %q, attempt %d; want still the claim its completion made", r.Status, r.RuntimeID, r.Attempt)
	}
}

// TestNATSTransport_ACompletionTakesUpTheRunsOfALostAnswerFirst: a busy
// runtime's completions bring its next runs, so it may not ask for work for
// a long while; the runs claimed for an answer it lost are taken up with
// its next completion, counted in what it takes, rather than wait (their
// leases running) for a request for work.
func TestNATSTransport_ACompletionTakesUpTheRunsOfALostAnswerFirst(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = time.Minute; c.HeartbeatTimeout = time.Minute })
	agent := p.CreateAgent("busy, with a lost answer")
	att := p.OnlineRuntime(t, agent.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr, _ := dialNATS(ctx, t, p.NATSURL(), att)
	defer tr.Close()
	taker := tr.(runtimeengine.Taker)
	rc := meshapi.NewClient(p.RuntimeConn(t, att)).Runtime(agent.ID, att.RuntimeID)

	running := p.CreateTask(agent.ID, "running")
	var run *mesh.TaskRun
	meshtest.Eventually(t, 20*time.Second, func() bool {
		run, _ = tr.Next(ctx)
		return run != nil
	}, func() string { return "the first run was never claimed" })
	if run.ID != running.ID {
		t.Fatalf("claimed %s, want %s", run.ID, running.ID)
	}
	// A run claimed for a request whose answer the runtime lost, and two
	// more waiting.
	lost := p.CreateTask(agent.ID, "claimed for a lost answer")
	key := mesh.NewID()
	res, err := rc.Offer(ctx, meshapi.OfferRequest{Wait: 5 * time.Second, Claim: true, Key: key})
	if err != nil || len(res.Claimed) != 1 || res.Claimed[0].ID != lost.ID {
		t.Fatalf("claim of %s: %+v, %v", lost.ID, res, err)
	}
	runtimeengine.LostAnswer(tr, key)
	waiting := []mesh.TaskRun{p.CreateTask(agent.ID, "waiting 1"), p.CreateTask(agent.ID, "waiting 2")}
	p.WaitTask(waiting[1].ID, 10*time.Second, meshtest.StatusIs(mesh.StatusPending))

	req := meshapi.CompleteRequest{TaskRunID: run.ID, Attempt: run.Attempt, Output: json.RawMessage(`{"text":"done"}`)}
	runs, err := taker.CompleteTaking(ctx, req, 2)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	if len(runs) != 2 || runs[0].ID != lost.ID || runs[1].ID != waiting[0].ID {
		t.Fatalf("the completion taking 2 brought %v; want %s (claimed for the lost answer), then %s", ids, lost.ID, waiting[0].ID)
	}
	if got := p.GetTask(waiting[1].ID); got.Status != mesh.StatusPending {
		t.Fatalf("the second waiting run is %s; want pending (the completion took 2 in all)", got.Status)
	}
	if n := runtimeengine.LostAnswers(tr); n != 1 {
		t.Fatalf("%d lost answers kept; want the one asked about, until it can claim nothing more", n)
	}
}
