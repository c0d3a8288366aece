package taskqueue_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/meshtest"
	"github.com/a2amesh/a2amesh/internal/platform"
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

	// Count the pull requests that reach the agent's queue consumer while the
	// runtime waits: a long poll is one parked request, not a loop.
	nc := p.Conn().NC
	requests, err := nc.SubscribeSync("$JS.API.CONSUMER.MSG.NEXT." + bus.QueueStream + "." + bus.QueueConsumer(agent.ID))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	resp := p.Pull(t, agent.ID, rt.RuntimeToken, "5s")
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	n, _, _ := requests.Pending()
	_ = requests.Unsubscribe() // a subscription with unread messages would hold up the platform's drain
	resp.Expect(t, http.StatusNoContent)
	if len(resp.Body) != 0 {
		t.Fatalf("204 with a body: %q", resp.Body)
	}
	if resp.Elapsed < 4500*time.Millisecond || resp.Elapsed > 7*time.Second {
		t.Fatalf("long poll of 5s answered after %s", resp.Elapsed)
	}
	if n < 1 || n > 5 {
		t.Fatalf("%d pull requests reached the queue during one 5s long poll, want a few", n)
	}
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
	// The agent's queue consumer exists once the runtime has been told about
	// it; a first run creates it.
	first := p.CreateTask(agent.ID, "warm-up")
	p.PullRun(t, agent.ID, rt.RuntimeToken)
	p.Report(t, first.ID, "complete", rt.RuntimeToken, nil).Expect(t, http.StatusOK)

	type result struct {
		resp *meshtest.Response
		at   time.Time
	}
	got := make(chan result, 1)
	go func() {
		resp := p.Pull(t, agent.ID, rt.RuntimeToken, "20s")
		got <- result{resp, time.Now()}
	}()
	// Create the run only once the pull is parked on the agent's consumer.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := p.Conn().JS.Consumer(ctx, bus.QueueStream, bus.QueueConsumer(agent.ID))
	if err != nil {
		t.Fatal(err)
	}
	meshtest.Eventually(t, 10*time.Second, func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumWaiting > 0
	}, func() string { return "the long poll never reached the agent's queue" })

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
// not wait still sees a run whose creation was already answered. (JetStream
// tells a consumer about a new message a moment after acknowledging its
// publish; under load a no-wait pull used to miss such a run now and then.)
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
