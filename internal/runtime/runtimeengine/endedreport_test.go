package runtimeengine_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
	"github.com/a2amesh/a2amesh/internal/runtime/adapterclient"
	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/internal/testkit/syncbuf"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/rs/zerolog"
)

// heldReport is a transport whose complete reports wait until the test
// lets them through, as a report whose answer is slow to come back does
// while a node of the platform fails over.
type heldReport struct {
	runtimeengine.Transport
	completing, release, completed chan struct{}
	// lost is closed once a renewal of the runtime's found a run lost.
	lost                   chan struct{}
	completeOnce, lostOnce sync.Once
}

func (h *heldReport) Complete(ctx context.Context, req meshapi.CompleteRequest) error {
	h.completeOnce.Do(func() { close(h.completing) })
	<-h.release
	defer close(h.completed)
	return h.Transport.Complete(ctx, req)
}

func (h *heldReport) Renew(ctx context.Context, ids []string) ([]string, error) {
	lost, err := h.Transport.Renew(ctx, ids)
	if len(lost) > 0 {
		h.lostOnce.Do(func() { close(h.lost) })
	}
	return lost, err
}

// TestRenew_ARunWhoseWorkIsDoneIsNotStoppedWhenThePlatformAlreadyEndedIt: a
// lease renewal that finds the platform already ended a run (its complete
// report went through, but the answer is still on its way) does not treat
// the finished work as work to stop: the runtime says nothing about
// stopping it, and its report is still delivered.
func TestRenew_ARunWhoseWorkIsDoneIsNotStoppedWhenThePlatformAlreadyEndedIt(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, longLeases)
	agent := p.CreateAgent("ended elsewhere")
	att := p.OnlineRuntime(t, agent.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr, hello := dialNATS(ctx, t, p.NATSURL(), att)
	defer tr.Close()
	held := &heldReport{Transport: tr, completing: make(chan struct{}), release: make(chan struct{}), completed: make(chan struct{}), lost: make(chan struct{})}

	srv, err := adapter.New(adapter.Config{Provider: provider.Echo{}, Workdir: t.TempDir(), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Shutdown(context.Background())
	ac, err := adapterclient.New("http://" + ln.Addr().String() + "/run-task")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncbuf.Buffer{}
	engine := runtimeengine.NewRuntime(runtimeengine.RuntimeConfig{
		AgentID: agent.ID, RuntimeID: att.RuntimeID, Transport: held, Hello: hello, Adapter: ac,
		Logger: zerolog.New(logs), HeartbeatInterval: time.Second, RenewInterval: 20 * time.Millisecond, DrainGrace: time.Second,
	})
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = engine.Run(runCtx) }()
	defer func() { stop(); engine.StopNow(); <-done }()

	run := p.CreateTask(agent.ID, "finished work")
	select {
	case <-held.completing:
	case <-ctx.Done():
		t.Fatal("the runtime never reported the run")
	}
	// The platform ends the run with the same report, as if the one held
	// here had reached it and only its answer were late.
	rc := p.RuntimeClient(t, att)
	if _, err := rc.Complete(ctx, meshapi.CompleteRequest{TaskRunID: run.ID, Attempt: 1, Output: json.RawMessage(`{"text":"finished work"}`)}); err != nil {
		t.Fatal(err)
	}
	// The runtime's next renewal finds the run no longer its own.
	select {
	case <-held.lost:
	case <-ctx.Done():
		t.Fatal("no renewal found the run ended")
	}
	close(held.release)
	select {
	case <-held.completed:
	case <-ctx.Done():
		t.Fatal("the runtime never finished its report")
	}
	if strings.Contains(logs.String(), "no longer assigned to this runtime; stopping it") {
		t.Fatalf("the runtime said it stops a run whose work was done:\n%s", logs.String())
	}
	if got := p.GetTask(run.ID); got.Status != mesh.StatusCompleted {
		t.Fatalf("the run is %s, want completed", got.Status)
	}
}
