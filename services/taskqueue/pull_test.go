package taskqueue_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestPull_LongPollWithoutWorkAnswers204AfterTheWait: an idle runtime's pull
// waits (seed 001 §4.3 without spinning) and then says there is nothing.
func TestPull_LongPollWithoutWorkAnswers204AfterTheWait(t *testing.T) {
	t.Parallel()
	// Presence outlasts the 5s wait, so the pull after it is not refused as offline.
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.HeartbeatTimeout = 30 * time.Second })
	agent := p.CreateAgent("idle")
	rt := p.OnlineRuntime(t, agent.ID)

	got := make(chan *meshtest.Response, 1)
	go func() { got <- p.Pull(t, agent.ID, rt.RuntimeToken, "5s") }()
	// A long poll is one request parked in the task queue, not a loop.
	p.WaitOffersWaiting(1)
	resp := <-got
	resp.Expect(t, http.StatusNoContent)
	if len(resp.Body) != 0 {
		t.Fatalf("204 with a body: %q", resp.Body)
	}
	if resp.Elapsed < 4500*time.Millisecond || resp.Elapsed > 7*time.Second {
		t.Fatalf("long poll of 5s answered after %s", resp.Elapsed)
	}
	p.WaitOffersWaiting(0)
	// Without ?wait the answer is immediate.
	if resp := p.Pull(t, agent.ID, rt.RuntimeToken, "").Expect(t, http.StatusNoContent); resp.Elapsed > time.Second {
		t.Fatalf("pull without wait took %s", resp.Elapsed)
	}
}

// TestPull_RunCreatedDuringALongPollIsHandedToIt: the waiting pull gets the
// run as soon as it is created, not at the end of its wait.
func TestPull_RunCreatedDuringALongPollIsHandedToIt(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("eager")
	rt := p.OnlineRuntime(t, agent.ID)

	type result struct {
		resp *meshtest.Response
		at   time.Time
	}
	got := make(chan result, 1)
	go func() {
		resp := p.Pull(t, agent.ID, rt.RuntimeToken, "20s")
		got <- result{resp, time.Now()}
	}()
	// Create the run only once the pull is parked.
	p.WaitOffersWaiting(1)

	created := time.Now()
	run := p.CreateTask(agent.ID, "now")
	var r result
	select {
	case r = <-got:
	case <-time.After(25 * time.Second):
		t.Fatal("the long poll never answered")
	}
	pulled := r.resp.Expect(t, http.StatusOK).Run(t)
	if pulled.ID != run.ID || pulled.Status != mesh.StatusRunning || pulled.Attempt != 1 {
		t.Fatalf("long poll got %s (%s, attempt %d), want %s running attempt 1", pulled.ID, pulled.Status, pulled.Attempt, run.ID)
	}
	if d := r.at.Sub(created); d > 2*time.Second {
		t.Fatalf("the run reached the waiting pull %s after it was created", d)
	}
}

// TestPull_RuntimeThatNeverHeartbeatedIsOffline: pulling needs presence
// (seed 001 §4.2: an offline runtime is given no new work).
func TestPull_RuntimeThatNeverHeartbeatedIsOffline(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("sleepy")
	rt := p.Attach(agent.ID)
	run := p.CreateTask(agent.ID, "waiting")
	e := p.Pull(t, agent.ID, rt.RuntimeToken, "").ExpectError(t, http.StatusConflict, mesh.CodeRuntimeOffline)
	if e.Error.Message == "" {
		t.Fatal("no advice in the offline answer")
	}
	p.Pull(t, agent.ID, rt.RuntimeToken, "2s").ExpectError(t, http.StatusConflict, mesh.CodeRuntimeOffline)
	if got := p.GetTask(run.ID); got.Status != mesh.StatusPending {
		t.Fatalf("run is %s after refused pulls", got.Status)
	}
	p.Heartbeat(t, rt.RuntimeToken)
	if got := p.PullRun(t, agent.ID, rt.RuntimeToken); got.ID != run.ID {
		t.Fatalf("pulled %s after the heartbeat, want %s", got.ID, run.ID)
	}
}

// TestPull_RunCreatedJustBeforeAPullWithoutWaitIsHandedOut: a pull that does
// not wait still sees a run whose creation was already answered.
func TestPull_RunCreatedJustBeforeAPullWithoutWaitIsHandedOut(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.HeartbeatTimeout = time.Minute })
	agent := p.CreateAgent("quick")
	rt := p.OnlineRuntime(t, agent.ID)
	for i := range 200 {
		run := p.CreateTask(agent.ID, "now")
		got := p.Pull(t, agent.ID, rt.RuntimeToken, "")
		if got.Status != http.StatusOK {
			t.Fatalf("pull %d right after a create: HTTP %d", i, got.Status)
		}
		if pulled := got.Run(t); pulled.ID != run.ID {
			t.Fatalf("pull %d got %s, want %s", i, pulled.ID, run.ID)
		}
		p.Report(t, run.ID, "complete", rt.RuntimeToken, nil).Expect(t, http.StatusOK)
	}
}

// TestPull_ARunClaimedForAPullWhoseRuntimeLeftIsGivenBack: a runtime that
// left while its pull waited gets nothing, and the run the pull then
// claims goes back to the queue at once, whether or not the pull was keyed
// (a keyed pull's runtime, back, asks for it too late: see
// TestOffer_AGiveBackUnderAClaimsKeyYieldsToTheRuntimeThatAskedForTheRun
// for the other order).
func TestPull_ARunClaimedForAPullWhoseRuntimeLeftIsGivenBack(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.HeartbeatTimeout = time.Minute; c.Lease = time.Minute })
	agent := p.CreateAgent("gone")
	rt := p.OnlineRuntime(t, agent.ID)
	pull := "/agent-accounts/" + agent.ID + "/task-runs/pull"

	for i, query := range []string{"", "&key=" + mesh.NewID()} {
		ctx, cancel := context.WithCancel(context.Background())
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.APIBase+pull+"?wait=30s"+query, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Runtime-Token", rt.RuntimeToken)
		answered := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			answered <- err
		}()
		p.WaitOffersWaiting(1)
		cancel()
		if err := <-answered; err == nil {
			t.Fatal("the abandoned pull was answered")
		}
		logged := strings.Count(p.Logs.String(), pull)
		run := p.CreateTask(agent.ID, "claimed for a runtime that left")
		// The pull's handler, which claims the run, has ended once its
		// request is logged.
		meshtest.Eventually(t, 20*time.Second, func() bool {
			return strings.Count(p.Logs.String(), pull) > logged
		}, func() string { return "the abandoned pull was never logged as ended" })
		if r := p.GetTask(run.ID); r.Status != mesh.StatusPending || r.RuntimeID != "" || r.Attempt != 0 {
			t.Fatalf("a run claimed for a pull (%q) whose runtime left is %s held by %q, attempt %d; want given back", query, r.Status, r.RuntimeID, r.Attempt)
		}
		if n := strings.Count(p.StoredEvents(t), mesh.EventTaskRunRequeued); n != i+1 {
			t.Fatalf("%d runs given back, want %d", n, i+1)
		}
		if got := p.PullRun(t, agent.ID, rt.RuntimeToken); got.ID != run.ID {
			t.Fatalf("the next pull got %s, want the run given back, %s", got.ID, run.ID)
		}
	}
}
