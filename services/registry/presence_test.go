package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go/jetstream"
)

// TestPresence_RuntimeWithoutHeartbeatsGoesOffline: after HeartbeatTimeout
// without a heartbeat a runtime is offline, announced by runtime.offline, and
// given no work until it heartbeats again (seed 001 §4.2).
func TestPresence_RuntimeWithoutHeartbeatsGoesOffline(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.HeartbeatTimeout = timeout })
	agent := p.CreateAgent("flaky")
	events := p.StreamEvents(t, url.Values{"agent_id": {agent.ID}, "type": {"runtime.online,runtime.offline"}})
	rt := p.Attach(agent.ID)
	if v := p.WaitRuntimeView(t, agent.ID, rt.RuntimeID, meshtest.Listed); v.Status != mesh.PresenceOffline {
		t.Fatalf("a runtime that never heartbeated is %s", v.Status)
	}

	// The heartbeat's time is taken by the registry while the call is
	// under way: no earlier than this.
	beat := time.Now()
	p.Heartbeat(t, rt.RuntimeToken)
	online := p.RuntimeView(t, agent.ID, rt.RuntimeID)
	if online.Status != mesh.PresenceOnline {
		t.Fatalf("after a heartbeat the runtime is %s", online.Status)
	}
	if ev := events.Next(t, 5*time.Second); ev.Type != mesh.EventRuntimeOnline || ev.Subject != rt.RuntimeID {
		t.Fatalf("first presence event: %s about %s", ev.Type, ev.Subject)
	}

	var offline mesh.RuntimeView
	meshtest.Eventually(t, timeout+3*time.Second, func() bool {
		offline = p.RuntimeView(t, agent.ID, rt.RuntimeID)
		return offline.Status == mesh.PresenceOffline
	}, func() string { return "the silent runtime stayed online" })
	if went := time.Since(beat); went < timeout {
		t.Fatalf("offline %s after the last heartbeat, before the %s timeout", went, timeout)
	}
	if offline.State != mesh.RuntimeActive || offline.LastHeartbeatAt == nil {
		t.Fatalf("offline runtime view: %+v, want still active with its last heartbeat time", offline)
	}
	ev := events.Next(t, 5*time.Second)
	var data mesh.RuntimeView
	if err := json.Unmarshal(ev.Data, &data); err != nil || ev.Type != mesh.EventRuntimeOffline || data.RuntimeID != rt.RuntimeID || data.Status != mesh.PresenceOffline {
		t.Fatalf("presence event after the timeout: %s %s (%v)", ev.Type, ev.Data, err)
	}

	p.CreateTask(agent.ID, "for later")
	p.Pull(t, agent.ID, rt.RuntimeToken, "").ExpectError(t, http.StatusConflict, mesh.CodeRuntimeOffline)

	// A heartbeat brings it back, with a new online event; the token still works.
	p.Heartbeat(t, rt.RuntimeToken)
	if ev := events.Next(t, 5*time.Second); ev.Type != mesh.EventRuntimeOnline {
		t.Fatalf("after the runtime came back: %s", ev.Type)
	}
	p.PullRun(t, agent.ID, rt.RuntimeToken)
}

// TestPresence_HeartbeatsKeepARuntimeOnline: heartbeats within the timeout
// keep presence; only one online event is emitted for a run of heartbeats.
func TestPresence_HeartbeatsKeepARuntimeOnline(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.HeartbeatTimeout = timeout })
	agent := p.CreateAgent("steady")
	events := p.StreamEvents(t, url.Values{"agent_id": {agent.ID}, "type": {"runtime.online,runtime.offline"}})
	rt := p.Attach(agent.ID)
	p.WaitRuntimeView(t, agent.ID, rt.RuntimeID, meshtest.Listed)
	// Heartbeat at a third of the timeout for three timeouts: staying online
	// over that window is what is being shown.
	tick := time.NewTicker(timeout / 3)
	defer tick.Stop()
	until := time.Now().Add(3 * timeout)
	for p.Heartbeat(t, rt.RuntimeToken); time.Now().Before(until); p.Heartbeat(t, rt.RuntimeToken) {
		if v := p.RuntimeView(t, agent.ID, rt.RuntimeID); v.Status != mesh.PresenceOnline {
			t.Fatalf("runtime went %s while heartbeating", v.Status)
		}
		<-tick.C
	}
	// Once heartbeats stop, the one offline event follows the one online event.
	evs := events.Until(t, timeout+3*time.Second, meshtest.TypeIs("runtime.offline", rt.RuntimeID))
	if len(evs) != 2 || evs[0].Type != mesh.EventRuntimeOnline {
		t.Fatalf("presence events: %d (%s first), want one online then one offline", len(evs), evs[0].Type)
	}
}

// TestPresence_SteadyHeartbeatsWakeNoPresenceView: a runtime's presence
// (online, offline) is watched by the registry and the task queue, and its
// heartbeats' times by the registry alone. A heartbeat that changes nothing
// but the time writes no presence record, so no presence view is woken by
// it, and the runtime's view still shows its last heartbeat.
func TestPresence_SteadyHeartbeatsWakeNoPresenceView(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("watched")
	rt := p.OnlineRuntime(t, agent.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream := func(bucket string) *jetstream.StreamInfo {
		s, err := p.Conn().JS.Stream(ctx, "KV_"+bucket)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	if n := stream(bus.BucketPresence).State.Consumers; n != 2 {
		t.Fatalf("%d watches of the presence bucket, want 2 (registry, task queue)", n)
	}
	if n := stream(bus.BucketHeartbeats).State.Consumers; n != 1 {
		t.Fatalf("%d watches of the heartbeats bucket, want 1 (registry)", n)
	}
	// The heartbeat right after the first may find the registry's view not
	// yet holding the presence the first wrote; once one writes nothing,
	// the following ones write nothing either.
	before := stream(bus.BucketPresence).State.LastSeq
	meshtest.Eventually(t, 10*time.Second, func() bool {
		p.Heartbeat(t, rt.RuntimeToken)
		after := stream(bus.BucketPresence).State.LastSeq
		steady := after == before
		before = after
		return steady
	}, func() string { return "every heartbeat wrote the runtime's presence" })
	var last time.Time
	for range 5 {
		last = time.Now()
		p.Heartbeat(t, rt.RuntimeToken)
	}
	if after := stream(bus.BucketPresence).State.LastSeq; after != before {
		t.Fatalf("five steady heartbeats wrote the presence bucket %d times, want none", after-before)
	}
	v := p.RuntimeView(t, agent.ID, rt.RuntimeID)
	if v.Status != mesh.PresenceOnline || v.LastHeartbeatAt == nil || v.LastHeartbeatAt.Before(last.Add(-time.Millisecond)) {
		t.Fatalf("runtime view %+v, want online with the last heartbeat at %s or later", v, last)
	}
}

// TestPresence_RetiredRuntimesLeaveNoPresence: a runtime replaced by a new
// pairing, or revoked, keeps its runtime record (the agent's history) but
// not its presence or heartbeat records, which every presence view would
// otherwise hold for good.
func TestPresence_RetiredRuntimesLeaveNoPresence(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("retiring")
	first := p.OnlineRuntime(t, agent.ID)
	second := p.OnlineRuntime(t, agent.ID)
	p.WaitRuntimeView(t, agent.ID, first.RuntimeID, func(v mesh.RuntimeView) bool { return v.State == mesh.RuntimeReplaced })
	p.Do(http.MethodPost, "/agent-runtimes/"+second.RuntimeID+"/revoke", nil, nil)
	p.WaitRuntimeView(t, agent.ID, second.RuntimeID, func(v mesh.RuntimeView) bool { return v.State == mesh.RuntimeRevoked })

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	held := func(bucket, runtimeID string) bool { return stored(ctx, t, p, bucket, runtimeID) }
	meshtest.Eventually(t, 10*time.Second, func() bool {
		for _, id := range []string{first.RuntimeID, second.RuntimeID} {
			if held(bus.BucketPresence, id) || held(bus.BucketHeartbeats, id) {
				return false
			}
		}
		return true
	}, func() string { return "a retired runtime's presence or heartbeat is still stored" })
	for _, id := range []string{first.RuntimeID, second.RuntimeID} {
		if v := p.RuntimeView(t, agent.ID, id); v.Status != mesh.PresenceOffline || v.State == mesh.RuntimeActive {
			t.Fatalf("retired runtime's view: %+v, want listed, offline and not active", v)
		}
	}
}

// TestPresence_AnAgentThatMovedAwayLeavesNoPresence: the presence of a
// runtime whose agent moved to another home region is kept there; the
// record it left here is deleted once it is offline.
func TestPresence_AnAgentThatMovedAwayLeavesNoPresence(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.HeartbeatTimeout = timeout })
	agent := p.CreateAgent("moving")
	rt := p.OnlineRuntime(t, agent.ID)
	p.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + agent.ID, Owner: true,
		JSON: map[string]any{"home_region": "elsewhere"}}).Expect(t, http.StatusOK)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if !stored(ctx, t, p, bus.BucketPresence, rt.RuntimeID) {
		t.Fatal("the runtime's presence is not stored before its agent moved")
	}
	meshtest.Eventually(t, timeout+10*time.Second, func() bool {
		return !stored(ctx, t, p, bus.BucketPresence, rt.RuntimeID) && !stored(ctx, t, p, bus.BucketHeartbeats, rt.RuntimeID)
	}, func() string { return "the moved agent's runtime's presence or heartbeat is still stored here" })
}

// stored reports whether a key of a bucket is stored, read straight from
// the bus.
func stored(ctx context.Context, t *testing.T, p *meshtest.Platform, bucket, key string) bool {
	t.Helper()
	kv, err := p.Conn().JS.KeyValue(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	_, err = kv.Get(ctx, key)
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatal(err)
	}
	return err == nil
}
