package edge

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRegionOutage: three regions, each with every service. A west
// agent's runs are kept in west: created there, they are stored, queued,
// claimed and reported there; created in east, they are handed to west's
// task queue and complete. With east (the region holding the global
// records) down, west goes on creating and completing its agents' runs,
// and a run of an east agent asked for in west fails with 503 rather than
// hanging; a webhook and a consumer credential of the west agent's events
// are given every event of those runs; west creates a new agent, its API
// key and its runtime, which works there. When east is back, every run is
// completed, once, and every event was given to each subscriber once.
func TestRegionOutage(t *testing.T) {
	d := startRegions(t, "east", "west", "south")
	endpoint := d.startAdapter()
	west := d.regions["west"].p

	agent := d.createAgent("west", "works in west", "west")
	eastAgent := d.createAgent("east", "works in east", "east")
	m := d.pair(agent, "west", endpoint)
	rt := m.start("--transport", "nats")
	m.waitConnected(rt, "nats", "west")
	m.completes("west", "created at home")
	m.completes("east", "created in east, for west")
	// A list of every run, asked in east, holds the runs west keeps.
	var listed meshapi.TaskRunList
	d.regions["east"].p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?limit=10", Owner: true}).
		Expect(t, http.StatusOK).Decode(t, &listed)
	if len(listed.TaskRuns) != 2 || listed.TaskRuns[0].TargetAgentID != agent.ID || listed.TaskRuns[0].ID < listed.TaskRuns[1].ID {
		t.Fatalf("every run, listed in east: %+v; want west's two runs, newest first", listed.TaskRuns)
	}
	// A conversation started in east goes on with the west agent: west
	// finds it where it was started.
	var conv mesh.Conversation
	d.regions["east"].p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/conversations", Owner: true, JSON: map[string]any{}}).
		Expect(t, http.StatusCreated).Decode(t, &conv)
	var inConv mesh.TaskRun
	west.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs", Owner: true, JSON: map[string]any{
		"target_agent_id": agent.ID, "conversation_id": conv.ID, "input": map[string]any{"text": "in a conversation started in east"}}}).
		Expect(t, http.StatusCreated).Decode(t, &inConv)
	if inConv.ConversationID != conv.ID || inConv.WorkspaceID != conv.WorkspaceID {
		t.Fatalf("a run in east's conversation %s (workspace %s): conversation %s, workspace %s", conv.ID, conv.WorkspaceID, inConv.ConversationID, inConv.WorkspaceID)
	}

	// A west agent's run that may delegate sees an east agent online when
	// east says its runtime is.
	d.regions["east"].p.OnlineRuntime(t, eastAgent.ID)
	var asker mesh.Agent
	west.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts", Owner: true, JSON: map[string]any{
		"name": "asks east", "home_region": "west", "delegation": map[string]any{"agents": []string{eastAgent.ID}}}}).
		Expect(t, http.StatusCreated).Decode(t, &asker)
	askerRT, askerRun := west.HeldRun(t, asker.ID, "whom may I ask?")
	nc, err := nats.Connect(askerRT.NATS.URL, nats.Token(askerRT.RuntimeToken), nats.CustomInboxPrefix(askerRT.NATS.InboxPrefix))
	if err != nil {
		t.Fatalf("connect as the asking runtime: %v", err)
	}
	defer nc.Close()
	var may meshapi.DelegateAgentList
	if err := bus.Call(context.Background(), nc, bus.RuntimeSubject(asker.ID, askerRT.RuntimeID, bus.RuntimeOpDelegateAgents),
		meshapi.DelegateAgentsRequest{TaskRunID: askerRun.ID}, &may); err != nil {
		t.Fatalf("the agents a west run may delegate to: %v", err)
	}
	if len(may.Agents) != 1 || may.Agents[0].AgentID != eastAgent.ID || !may.Agents[0].Online {
		t.Fatalf("the agents a west run may delegate to: %+v; want the east agent, online", may.Agents)
	}

	// An A2A API key of the west agent, made while the global records can
	// be written; west reads it from its mirror.
	var key struct {
		APIKey string `json:"api_key"`
	}
	west.Do(http.MethodPost, "/a2a/"+agent.ID+"/api-keys", map[string]any{"name": "outage"}, &key)
	a2aSend(t, west, agent.ID, key.APIKey, "over A2A with east up")

	var runs []string
	var mu sync.Mutex
	create := func(n int, label string) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run := west.CreateTask(agent.ID, fmt.Sprintf("%s %d", label, i))
				mu.Lock()
				runs = append(runs, run.ID)
				mu.Unlock()
			}()
		}
		wg.Wait()
	}

	// A webhook and a consumer credential of the west agent's events,
	// made in west: they read west's own event stream, so they go on
	// while any other region is down.
	hook, hookURL := webhookReceiver(t)
	var webhook meshapi.CreateWebhookResponse
	west.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/webhooks", Owner: true,
		JSON: map[string]any{"url": hookURL, "agent_id": agent.ID}}).Expect(t, http.StatusCreated).Decode(t, &webhook)
	// A webhook of every agent too: each region's part reads that region's
	// stream, so west's events reach it while east is down.
	everyHook, everyHookURL := webhookReceiver(t)
	west.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/webhooks", Owner: true,
		JSON: map[string]any{"url": everyHookURL}}).Expect(t, http.StatusCreated)
	var con meshapi.CreateConsumerResponse
	west.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/consumers", Owner: true,
		JSON: map[string]any{"name": "west events", "agent_id": agent.ID}}).Expect(t, http.StatusCreated).Decode(t, &con)
	if con.Stream != bus.RegionEventStream("west") {
		t.Fatalf("a consumer credential of a west agent's events reads stream %q; want west's, %s", con.Stream, bus.RegionEventStream("west"))
	}
	read := readConsumer(t, con)
	// A consumer credential of every agent's events has a durable consumer
	// on each region's stream (the origin's skipping its copies of the
	// others'): west's part is read while east is down.
	var everyCon meshapi.CreateConsumerResponse
	west.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/consumers", Owner: true,
		JSON: map[string]any{"name": "every region"}}).Expect(t, http.StatusCreated).Decode(t, &everyCon)
	// West's credentials service names the regions it has heard of; one
	// it has not heard of yet (its record a moment from west's copy) is
	// added by its pass every 5 s.
	meshtest.Eventually(t, 30*time.Second, func() bool {
		if len(everyCon.Streams) == 3 {
			return true
		}
		var list meshapi.ConsumerList
		west.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/consumers", Owner: true}).Expect(t, http.StatusOK).Decode(t, &list)
		for _, c := range list.Consumers {
			if c.ConsumerID == everyCon.ConsumerID {
				everyCon.Consumer = c
			}
		}
		return len(everyCon.Streams) == 3
	}, func() string {
		return fmt.Sprintf("the consumer credential of every agent's events never read 3 regions' streams: %+v", everyCon.Streams)
	})
	parts := map[string]bus.RegionStream{}
	for _, rs := range everyCon.Streams {
		parts[rs.Region] = rs
	}
	if len(parts) != 3 || parts["east"].Stream != bus.EventStream || !parts["east"].SkipSourced || everyCon.Stream != bus.EventStream ||
		parts["west"].Stream != bus.RegionEventStream("west") || parts["west"].SkipSourced || parts["south"].Stream != bus.RegionEventStream("south") {
		t.Fatalf("a consumer credential of every agent's events: stream %s, streams %+v; want the gathered log, and each region's stream with east's skipping copies", everyCon.Stream, everyCon.Streams)
	}
	westPart := everyCon
	westPart.Stream = parts["west"].Stream
	readEvery := readConsumer(t, westPart)

	d.sc.Stop("east")
	// Every process of west and south stays ready for its own region, as
	// the Helm chart's readiness probe asks, and names east unreachable.
	d.regions["west"].waitReadyNaming(t, "east")
	d.regions["south"].waitReadyNaming(t, "east")

	// A task for an east agent is refused: the first one once west finds
	// east does not answer, the next ones at once (within the second the
	// client waits), each with Retry-After and the region named, however
	// the client retries (an idempotency key).
	forEast := func(i int, timeout time.Duration) *meshtest.Response {
		return west.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs", Owner: true, Timeout: timeout,
			Header: http.Header{"Idempotency-Key": {fmt.Sprintf("for-east-%d", i)}},
			JSON:   map[string]any{"target_agent_id": eastAgent.ID, "input": map[string]any{"text": "for east, while east is down"}}})
	}
	res := forEast(0, 30*time.Second)
	res.ExpectError(t, http.StatusServiceUnavailable, mesh.CodeUnavailable)
	t.Logf("a task for an east agent, created in west with east down, was refused in %s: %s", res.Elapsed, res.Body)
	for i := 1; i <= 3; i++ {
		res := forEast(i, time.Second)
		res.ExpectError(t, http.StatusServiceUnavailable, mesh.CodeUnavailable)
		if res.Header.Get("Retry-After") == "" || !strings.Contains(string(res.Body), "region east cannot be reached") {
			t.Fatalf("task %d for an east agent with east down: Retry-After %q, %s; want Retry-After and the region named", i, res.Header.Get("Retry-After"), res.Body)
		}
	}

	// Global records are written in west meanwhile, east holding them or
	// not: a new agent homed in west (owned by west), an API key of it,
	// its runtime's pairing, and its first work, asked directly and over
	// A2A with the new key.
	fresh := d.createAgent("west", "made while east is down", "west")
	var freshKey struct {
		APIKey string `json:"api_key"`
	}
	west.Do(http.MethodPost, "/a2a/"+fresh.ID+"/api-keys", map[string]any{"name": "made while east is down"}, &freshKey)
	d.procs.Secret(freshKey.APIKey)
	fm := d.pair(fresh, "west", endpoint)
	fm.waitConnected(fm.start("--transport", "nats"), "nats", "west")
	fm.completes("west", "a new agent's first run, with east down")
	a2aSend(t, west, fresh.ID, freshKey.APIKey, "over A2A to an agent made while east is down")
	// A delegation between two west agents is made and followed in west:
	// the new agent's routing rule hands a run to the first agent, and the
	// run completes with the delegate's answer.
	west.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts/" + fresh.ID + "/routing-rules", Owner: true,
		JSON: map[string]any{"match": map[string]any{"keywords": []string{"relay"}}, "target": map[string]any{"agent_id": agent.ID}}}).
		Expect(t, http.StatusCreated)
	relayed := west.CreateTask(fresh.ID, "relay this while east is down")
	if got := west.WaitTask(relayed.ID, 60*time.Second, meshtest.StatusIs(mesh.StatusCompleted, mesh.StatusFailed, mesh.StatusCanceled)); got.Status != mesh.StatusCompleted ||
		got.DelegatedTo == nil || got.DelegatedTo.AgentID != agent.ID || got.DelegatedTo.TaskRunID == "" {
		t.Fatalf("a run delegated from one west agent to another with east down: %s %+v, delegated to %+v; want it completed by the first agent", got.Status, got.Error, got.DelegatedTo)
	}

	// The webhook's endpoint refuses its first delivery while east is
	// down: the delivery is retried and recorded in west.
	hook.refuseNext.Store(true)
	create(200, "while east is down")
	for _, id := range runs {
		got := west.WaitTask(id, 120*time.Second, meshtest.StatusIs(mesh.StatusCompleted, mesh.StatusFailed))
		if got.Status != mesh.StatusCompleted {
			t.Fatalf("run %s ended %s with east down: %+v", id, got.Status, got.Error)
		}
	}

	// Every one of those runs' events reached the webhook and the consumer
	// credential made in west, with east down.
	hook.waitCompletions(t, "the webhook, with east down,", runs, 60*time.Second)
	read.waitCompletions(t, "the consumer credential, with east down,", runs, 60*time.Second)
	readEvery.waitCompletions(t, "west's part of the consumer credential of every agent, with east down,", runs, 60*time.Second)
	everyHook.waitCompletions(t, "the webhook of every agent, with east down,", runs, 60*time.Second)
	var retried meshapi.DeliveryList
	west.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/webhooks/" + webhook.WebhookID + "/deliveries", Owner: true}).
		Expect(t, http.StatusOK).Decode(t, &retried)
	if len(retried.Deliveries) != 1 || retried.Deliveries[0].State != meshapi.DeliveryDelivered || retried.Deliveries[0].AttemptCount != 2 {
		t.Fatalf("the webhook's deliveries, asked in west with east down: %+v; want the one refused once, then delivered", retried.Deliveries)
	}

	// West's doors go on answering for its agents: the A2A endpoint (a
	// task created, worked and answered, with a file in and a file out),
	// the artifacts of its runs, and their events, read from west's own
	// event stream.
	events := west.StreamEvents(t, url.Values{"agent_id": {agent.ID}})
	// Every agent's events too, each region's read in its own stream: the
	// stream says east cannot be read and goes on with west's and south's.
	every := west.StreamEvents(t, url.Values{})
	meshtest.Eventually(t, 30*time.Second, func() bool { return slices.Contains(every.Comments(), ": unreachable_regions east") },
		func() string {
			return fmt.Sprintf("a stream of every agent's events, opened in west with east down, said %q", every.Comments())
		})
	task := a2aSend(t, west, agent.ID, key.APIKey, "over A2A while east is down")
	// The envelope endpoint too, twice in one conversation.
	envelopeExecute(t, west, agent.ID, key.APIKey, "over the envelope while east is down", "outage-talk")
	envelopeExecute(t, west, agent.ID, key.APIKey, "again in the same conversation", "outage-talk")
	var created, finished meshtest.Event
	for finished.ID == "" {
		ev := events.Next(t, 30*time.Second)
		var run mesh.TaskRun
		if json.Unmarshal(ev.Data, &run) != nil || run.ID != task {
			continue
		}
		if !strings.HasPrefix(ev.SSEID, "west:") {
			t.Fatalf("event %s of a west agent's run has SSE id %q; want one of west's stream (west:<sequence>)", ev.Type, ev.SSEID)
		}
		switch ev.Type {
		case mesh.EventTypePrefix + "task_run.created":
			created = ev
		case mesh.EventTypePrefix + "task_run.completed":
			finished = ev
		}
	}
	if created.ID == "" {
		t.Fatalf("the A2A task's run completed (%s) with no created event before it", finished.SSEID)
	}
	var everyDone meshtest.Event
	for everyDone.ID == "" {
		ev := every.Next(t, 30*time.Second)
		var run mesh.TaskRun
		if json.Unmarshal(ev.Data, &run) == nil && run.ID == task && ev.Type == mesh.EventTypePrefix+"task_run.completed" {
			everyDone = ev
		}
	}
	if !strings.Contains(everyDone.SSEID, "west:") || strings.Contains(everyDone.SSEID, "east:") {
		t.Fatalf("the completion of a west run, in a stream of every agent's events with east down, has id %q; want west's position and none of east's", everyDone.SSEID)
	}
	every.Discard()
	// A client that reconnects with the last id it saw resumes in west's
	// stream, right after it.
	resumed := west.StreamEventsFrom(t, url.Values{"agent_id": {agent.ID}}, created.SSEID).Next(t, 30*time.Second)
	if resumed.SSEID == created.SSEID || !strings.HasPrefix(resumed.SSEID, "west:") || resumed.Subject != created.Subject {
		t.Fatalf("resuming after %s gave %s (%s, %s); want the run's next event in west's stream", created.SSEID, resumed.SSEID, resumed.Type, resumed.Subject)
	}
	// An id of a region that keeps no events is refused, not followed.
	west.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/events?agent_id=" + agent.ID, Owner: true,
		Header: http.Header{"Last-Event-ID": {"nowhere:1"}}}).ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
	expectReply(t, west, runs[0])
	// A list of every agent's runs, asked in west, holds west's and says
	// east's are missing.
	var partial meshapi.TaskRunList
	west.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?limit=5", Owner: true}).
		Expect(t, http.StatusOK).Decode(t, &partial)
	if len(partial.TaskRuns) != 5 || partial.TaskRuns[0].TargetAgentID != agent.ID || !slices.Equal(partial.UnreachableRegions, []string{"east"}) {
		t.Fatalf("every run, listed in west with east down: %d runs, unreachable regions %v; want 5 of west's, and east named", len(partial.TaskRuns), partial.UnreachableRegions)
	}

	d.sc.Start("east")
	d.sc.WaitJetStream()
	// West forgets east was unreachable once it answers again, and so does
	// the stream of every agent's events.
	d.regions["west"].waitReadyNaming(t)
	meshtest.Eventually(t, 60*time.Second, func() bool { return slices.Contains(every.Comments(), ": unreachable_regions ") },
		func() string {
			return fmt.Sprintf("the stream of every agent's events, once east is back, said %q", every.Comments())
		})
	// A client of every agent's events that reconnects with the id it saw
	// last resumes after it in each region's stream: the next event is
	// one it did not see, the run's own events once each and in order.
	resumedEvery := west.StreamEventsFrom(t, url.Values{}, everyDone.SSEID)
	after := west.CreateTask(agent.ID, "after the stream of every agent's events resumed")
	seen := map[string]bool{}
	for {
		ev := resumedEvery.Next(t, 30*time.Second)
		if ev.ID == everyDone.ID || seen[ev.ID] {
			t.Fatalf("the resumed stream of every agent's events gave %s (%s, id %s) again", ev.ID, ev.Type, ev.SSEID)
		}
		seen[ev.ID] = true
		var run mesh.TaskRun
		if json.Unmarshal(ev.Data, &run) == nil && run.ID == after.ID && ev.Type == mesh.EventTypePrefix+"task_run.completed" {
			break
		}
	}
	m.completes("east", "created in east once it is back")
	for _, id := range runs {
		got := d.regions["east"].p.WaitTask(id, 60*time.Second, meshtest.StatusIs(mesh.StatusCompleted, mesh.StatusFailed))
		if got.Status != mesh.StatusCompleted || got.Attempt != 1 {
			t.Fatalf("run %s after east came back: %s, attempt %d", id, got.Status, got.Attempt)
		}
	}
	// A west run's artifacts are read in east too, from west.
	expectReply(t, d.regions["east"].p, runs[1])
	// The event log every reader follows, kept in east, catches up on
	// west's events: each run's completion, once.
	_, js := d.sc.Connect("east", 0)
	var completed map[string]int
	meshtest.Eventually(t, 60*time.Second, func() bool {
		completed = completions(t, js, agent.ID)
		for _, id := range runs {
			if completed[id] != 1 {
				return false
			}
		}
		return true
	}, func() string {
		return fmt.Sprintf("the event log does not hold one completion of each of the %d runs made with east down: %d runs have one", len(runs), len(completed))
	})

	// Each event reached each subscriber once, the outage notwithstanding.
	for who, r := range map[string]*received{"webhook": hook, "consumer credential": read, "consumer credential of every agent (west's part)": readEvery, "webhook of every agent": everyHook} {
		if again := r.repeated(); len(again) > 0 {
			t.Fatalf("the %s received %d events more than once: %v", who, len(again), again)
		}
	}

	// An agent that moves leaves its finished runs where they ran: their
	// artifacts, and its caller's A2A tasks, are still found.
	if got := west.GetTask(runs[2]); got.Region != "west" {
		t.Fatalf("run %s of a west agent is kept in %q; want west", got.ID, got.Region)
	}
	west.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + agent.ID, Owner: true,
		JSON: map[string]any{"home_region": "south"}}).Expect(t, http.StatusOK)
	// West sees the move at once: the agent's record is west's own, and
	// west's copy of every region's agents sources it in west.
	meshtest.Eventually(t, 30*time.Second, func() bool {
		// South keeps none of the agent's runs: a list of them, handed
		// to south, is empty once west's task queue sees the move.
		var l meshapi.TaskRunList
		west.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?limit=1&agent_id=" + agent.ID, Owner: true}).
			Expect(t, http.StatusOK).Decode(t, &l)
		return len(l.TaskRuns) == 0
	}, func() string { return "west's task queue never saw the agent move to south" })
	expectReply(t, west, runs[2])
	a2aGet(t, west, agent.ID, key.APIKey, task)
}

// a2aCall makes a JSON-RPC call to an agent's A2A endpoint with an API
// key and decodes its result into result; an error answer fails the test.
// It returns the raw answer.
func a2aCall(t *testing.T, p *meshtest.Platform, agentID, apiKey, method string, params, result any) []byte {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	res := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a/" + agentID, Body: body, ContentType: "application/json",
		Header: http.Header{"X-Api-Key": {apiKey}}}).Expect(t, http.StatusOK)
	var answer struct {
		Error  json.RawMessage `json:"error"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(res.Body, &answer); err != nil || answer.Error != nil || json.Unmarshal(answer.Result, result) != nil {
		t.Fatalf("%s: %v %s", method, err, res.Body)
	}
	return res.Body
}

// a2aGet gets an A2A task as its caller, which must see it.
func a2aGet(t *testing.T, p *meshtest.Platform, agentID, apiKey, taskID string) {
	t.Helper()
	var task struct {
		ID string `json:"id"`
	}
	if a2aCall(t, p, agentID, apiKey, "tasks/get", map[string]any{"id": taskID}, &task); task.ID != taskID {
		t.Fatalf("tasks/get %s by its caller answered task %q", taskID, task.ID)
	}
}

// a2aSend sends a text and a file to an agent's A2A endpoint with a
// blocking message/send and returns the task, which must be completed with
// the agent's answer and the file it wrote.
func a2aSend(t *testing.T, p *meshtest.Platform, agentID, apiKey, text string) string {
	t.Helper()
	var task struct {
		ID     string `json:"id"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
		Artifacts []struct {
			Name string `json:"name"`
		} `json:"artifacts"`
	}
	raw := a2aCall(t, p, agentID, apiKey, "message/send", map[string]any{
		"message": map[string]any{"messageId": mesh.NewID(), "role": "user", "kind": "message", "parts": []any{
			map[string]any{"kind": "text", "text": text},
			map[string]any{"kind": "file", "file": map[string]any{"name": "in.txt", "mimeType": "text/plain",
				"bytes": base64.StdEncoding.EncodeToString([]byte("a file in"))}},
		}}}, &task)
	names := []string{}
	for _, a := range task.Artifacts {
		names = append(names, a.Name)
	}
	if task.Status.State != "completed" || !strings.Contains(string(raw), "done: "+text) || !slices.Contains(names, "reply.txt") {
		t.Fatalf("message/send %q: task %s %s with artifacts %v; want completed with the agent's answer and reply.txt: %s",
			text, task.ID, task.Status.State, names, raw)
	}
	return task.ID
}

// envelopeExecute runs execute-agent on the envelope endpoint (seed 002)
// in a caller's conversation, which must answer with the agent's reply.
func envelopeExecute(t *testing.T, p *meshtest.Platform, agentID, apiKey, input, conversationID string) {
	t.Helper()
	id := mesh.NewID()
	began := time.Now()
	defer func() { t.Logf("execute-agent %q answered in %s", input, time.Since(began)) }()
	res := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a", Header: http.Header{"X-Api-Key": {apiKey}}, JSON: map[string]any{
		"a2a":     map[string]any{"protocol": "a2a", "version": "1.0", "id": id, "timestamp": time.Now().UTC().Format(time.RFC3339), "type": "request"},
		"context": map[string]any{"from": "caller", "to": agentID, "conversationId": conversationID},
		"payload": map[string]any{"method": "execute-agent", "params": map[string]any{"agentId": agentID, "input": input}},
	}}).Expect(t, http.StatusOK)
	var answer struct {
		Payload struct {
			Result struct {
				Output string `json:"output"`
			} `json:"result"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(res.Body, &answer); err != nil || answer.Payload.Result.Output != "done: "+input {
		t.Fatalf("execute-agent %q: %v %s", input, err, res.Body)
	}
}

// expectReply checks, through p, that a run has the file its agent wrote
// (agentScript's reply.txt) and that its content is the run's answer.
func expectReply(t *testing.T, p *meshtest.Platform, runID string) {
	t.Helper()
	var list meshapi.ArtifactList
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs/" + runID + "/artifacts", Owner: true}).
		Expect(t, http.StatusOK).Decode(t, &list)
	if len(list.Artifacts) != 1 || list.Artifacts[0].Filename != "reply.txt" {
		t.Fatalf("artifacts of run %s: %+v; want reply.txt", runID, list.Artifacts)
	}
	content := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/artifacts/" + list.Artifacts[0].ID + "/content", Owner: true}).
		Expect(t, http.StatusOK)
	if !strings.HasPrefix(string(content.Body), "done: ") {
		t.Fatalf("content of run %s's reply.txt: %q; want the agent's answer", runID, content.Body)
	}
}

// completions counts the task_run.completed events of each run of agent in
// the event log.
func completions(t *testing.T, js jetstream.JetStream, agentID string) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, bus.EventStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{bus.EventFilter(agentID, string(mesh.KindTaskRun), "")},
	})
	if err != nil {
		t.Fatalf("event log: %v", err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatalf("event log: %v", err)
	}
	out := map[string]int{}
	for left := info.NumPending; left > 0; left-- {
		msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatalf("event log: %v", err)
		}
		if msg.Headers().Get("ce-type") == mesh.EventTaskRunCompleted {
			_, _, id, _ := bus.ParseEventSubject(msg.Subject())
			out[id]++
		}
	}
	return out
}
