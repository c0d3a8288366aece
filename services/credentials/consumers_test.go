package credentials_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func createConsumer(t *testing.T, p *meshtest.Platform, body map[string]any) meshapi.CreateConsumerResponse {
	t.Helper()
	var c meshapi.CreateConsumerResponse
	resp := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/consumers", Owner: true, JSON: body}).Expect(t, http.StatusCreated)
	resp.Decode(t, &c)
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("the answer carrying a credential may be cached: Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
	return c
}

// nextEventOf reads events from sub until one of type typ about subject.
func nextEventOf(t *testing.T, sub *nats.Subscription, typ, subject string) {
	t.Helper()
	for {
		msg, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("waiting for %s of %s: %v", typ, subject, err)
		}
		if msg.Header.Get("ce-type") == typ && msg.Header.Get("ce-subject") == subject {
			return
		}
	}
}

// TestConsumers_ACredentialReadsItsAgentsEventsAndNothingElse: a consumer
// credential for agent A may follow A's events live (as LiveUser) and
// through the durable JetStream consumer the platform made for it (as a
// token); subscribing to B's events, to events at all where it reads its
// durable consumer, or creating a consumer of its own, is refused by the
// NATS server itself.
func TestConsumers_ACredentialReadsItsAgentsEventsAndNothingElse(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agentA, agentB := p.CreateAgent("a"), p.CreateAgent("b")
	con := createConsumer(t, p, map[string]any{"name": "billing", "agent_id": agentA.ID})
	if !strings.HasPrefix(con.Credential, "a2acon_") || con.NATSURL != p.NATSURL() || con.Stream != bus.EventStream {
		t.Fatalf("created consumer: %+v", con.Consumer)
	}
	if len(con.Subjects) != 1 || con.Subjects[0] != bus.AgentEventsFilter(agentA.ID) {
		t.Fatalf("subjects %v, want only agent a's", con.Subjects)
	}

	errs := &asyncErrors{}
	nc, err := nats.Connect(con.NATSURL, nats.Token(con.Credential), nats.CustomInboxPrefix(con.InboxPrefix), nats.ErrorHandler(errs.handler))
	if err != nil {
		t.Fatalf("the credential was refused: %v", err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Live, with core NATS (what `nats sub` does), as the live user.
	if con.LiveUser != bus.LiveEventsUser {
		t.Fatalf("consumer told the live user %q", con.LiveUser)
	}
	liveErrs := &asyncErrors{}
	lnc, err := nats.Connect(con.NATSURL, nats.UserInfo(con.LiveUser, con.Credential), nats.ErrorHandler(liveErrs.handler))
	if err != nil {
		t.Fatalf("the credential was refused live: %v", err)
	}
	defer lnc.Close()
	live, err := lnc.SubscribeSync(bus.AgentEventsFilter(agentA.ID))
	if err != nil {
		t.Fatal(err)
	}
	if err := lnc.Flush(); err != nil {
		t.Fatal(err)
	}
	runA := p.CreateTask(agentA.ID, "a's work")
	nextEventOf(t, live, mesh.EventTaskRunCreated, runA.ID)
	// Live, it may only listen: it asks nothing of anyone.
	for _, subject := range []string{bus.AgentEventsFilter(agentB.ID), "mesh.evt.>", "_INBOX.>"} {
		if _, err := lnc.SubscribeSync(subject); err != nil {
			t.Fatal(err)
		}
		if err := lnc.Flush(); err != nil {
			t.Fatal(err)
		}
		liveErrs.waitFor(t, subject)
	}
	infoLive := bus.UntrustedJSAPI("CONSUMER.INFO." + bus.EventStream + "." + con.DurableName)
	if err := lnc.PublishRequest(infoLive, con.InboxPrefix+".x", nil); err != nil {
		t.Fatal(err)
	}
	if err := lnc.Flush(); err != nil {
		t.Fatal(err)
	}
	liveErrs.waitFor(t, infoLive)

	// Durably, from the start of the stream, through the consumer the
	// platform made with the credential.
	if con.JSAPIPrefix != bus.JetStreamAPIPrefix {
		t.Fatalf("consumer told the JetStream API prefix %q", con.JSAPIPrefix)
	}
	js, err := jetstream.NewWithAPIPrefix(nc, con.JSAPIPrefix)
	if err != nil {
		t.Fatal(err)
	}
	durable, err := js.Consumer(ctx, bus.EventStream, con.DurableName)
	if err != nil {
		t.Fatalf("own durable consumer: %v", err)
	}
	batch, err := durable.Fetch(100, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for m := range batch.Messages() {
		if _, _, _, ok := bus.ParseEventSubject(m.Subject()); !ok || !strings.HasPrefix(m.Subject(), "mesh.evt."+agentA.ID+".") {
			t.Fatalf("durable consumer delivered %s", m.Subject())
		}
		seen[m.Headers().Get("ce-type")] = true
		if err := m.Ack(); err != nil {
			t.Fatalf("ack: %v", err)
		}
	}
	if !seen[mesh.EventAgentCreated] || !seen[mesh.EventTaskRunCreated] {
		t.Fatalf("durable consumer delivered %v, want a's agent.created and task_run.created", seen)
	}

	// What it may not do: each is refused by the server.
	for _, subject := range []string{bus.AgentEventsFilter(agentA.ID), bus.AgentEventsFilter(agentB.ID), "mesh.evt.>", "mesh.evt.*.task_run.*", "_INBOX.>", "mesh.rt.>", "$JS.API.>"} {
		if _, err := nc.SubscribeSync(subject); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		errs.waitFor(t, subject)
	}
	// Nor may it make consumers of its own, whatever their name or filter:
	// a consumer's configuration names subjects in the platform's account.
	for _, api := range []string{
		"$JS.API.CONSUMER.CREATE." + bus.EventStream + "." + con.DurableName + "." + bus.AgentEventsFilter(agentA.ID),
		bus.UntrustedJSAPI("CONSUMER.CREATE." + bus.EventStream + "." + con.DurableName + "." + bus.AgentEventsFilter(agentA.ID)),
		"$JS.API.CONSUMER.DURABLE.CREATE." + bus.EventStream + "." + con.DurableName,
	} {
		if err := nc.PublishRequest(api, con.InboxPrefix+".x", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		errs.waitFor(t, api)
	}
	// Neither can it read through another credential's consumer or the platform's.
	for _, api := range []string{
		bus.UntrustedJSAPI("CONSUMER.MSG.NEXT." + bus.EventStream + "." + bus.WebhookConsumer(agentB.ID)),
		bus.UntrustedJSAPI("CONSUMER.INFO." + bus.EventStream + "." + bus.WebhookConsumer(agentA.ID)),
		// The account imports consumer reads of every stream; its own
		// consumer's name on another stream is still refused.
		bus.UntrustedJSAPI("CONSUMER.MSG.NEXT.KV_" + bus.BucketRuns + "." + con.DurableName),
		bus.UntrustedJSAPI("CONSUMER.INFO." + bus.RegionEventStream("west") + "." + con.DurableName),
		"$JS.API.STREAM.INFO." + bus.EventStream,
		"$JS.API.STREAM.MSG.GET." + bus.EventStream,
		bus.EventSubject(agentA.ID, string(mesh.KindTaskRun), runA.ID),
	} {
		if err := nc.PublishRequest(api, con.InboxPrefix+".x", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		errs.waitFor(t, api)
	}
	if !nc.IsConnected() {
		t.Fatal("the connection was dropped; refusals should only refuse")
	}
	meshtest.AssertNoSecrets(t, []string{con.Credential}, map[string]string{"logs": p.Logs.String()})
}

// TestConsumers_KindsNarrowTheSubjectsAndTheCLIFormWorks: types narrow a
// credential to their kinds, and the credential is also accepted as the
// password of the live user (what `nats --user live --password` sends).
func TestConsumers_KindsNarrowTheSubjectsAndTheCLIFormWorks(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("kinds")
	con := createConsumer(t, p, map[string]any{"name": "runs only", "types": []string{"task_run.completed", "dev.a2amesh.task_run.failed"}})
	if len(con.Subjects) != 1 || con.Subjects[0] != "mesh.evt.*.task_run.*" || len(con.Types) != 2 {
		t.Fatalf("consumer %+v, want the task_run kind of every agent", con.Consumer)
	}
	errs := &asyncErrors{}
	nc, err := nats.Connect(con.NATSURL, nats.UserInfo(con.LiveUser, con.Credential), nats.ErrorHandler(errs.handler))
	if err != nil {
		t.Fatalf("credential as the live user's password: %v", err)
	}
	defer nc.Close()
	runs, err := nc.SubscribeSync("mesh.evt.*.task_run.*")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.SubscribeSync(bus.AgentEventsFilter(agent.ID)); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	errs.waitFor(t, bus.AgentEventsFilter(agent.ID))
	run := p.CreateTask(agent.ID, "x")
	nextEventOf(t, runs, mesh.EventTaskRunCreated, run.ID)

	for body, code := range map[string]mesh.Code{
		`{"name":"x","types":["task_run.nope"]}`: mesh.CodeInvalidRequest,
		`{"name":""}`:                            mesh.CodeInvalidRequest,
		`{"name":"x","agent_id":"01a1ff9a-1025-789a-8f2a-af98e65746d2"}`: mesh.CodeNotFound,
		`{"name":"x","extra":true}`:                                      mesh.CodeInvalidRequest,
	} {
		resp := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/consumers", Owner: true, Body: []byte(body), ContentType: "application/json"})
		if e := resp.Err(t); e.Error.Code != string(code) {
			t.Fatalf("%s: %s, want %s", body, resp.Body, code)
		}
	}
}

// TestConsumers_DeleteRevokesTheCredentialAndDropsItsConnections: after
// DELETE /consumers/{id} the credential no longer connects, its open
// connections (reading its durable consumer, and following live) are closed
// at once, and its durable consumer is gone.
func TestConsumers_DeleteRevokesTheCredentialAndDropsItsConnections(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	con := createConsumer(t, p, map[string]any{"name": "temporary"})
	keep := createConsumer(t, p, map[string]any{"name": "kept"})
	dropped := make(chan struct{})
	nc, err := nats.Connect(con.NATSURL, nats.Token(con.Credential), nats.MaxReconnects(0),
		nats.ClosedHandler(func(*nats.Conn) { close(dropped) }))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	liveDropped := make(chan struct{})
	live, err := nats.Connect(con.NATSURL, nats.UserInfo(con.LiveUser, con.Credential), nats.MaxReconnects(0),
		nats.ClosedHandler(func(*nats.Conn) { close(liveDropped) }))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()

	var l meshapi.ConsumerList
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/consumers", Owner: true}).Expect(t, http.StatusOK).Decode(t, &l)
	if len(l.Consumers) != 2 || l.Consumers[0].ConsumerID != con.ConsumerID || l.Consumers[1].ConsumerID != keep.ConsumerID {
		t.Fatalf("list %+v, want both, oldest first", l.Consumers)
	}
	p.Send(t, meshtest.Request{Method: http.MethodDelete, Path: "/consumers/" + con.ConsumerID, Owner: true}).Expect(t, http.StatusNoContent)
	select {
	case <-dropped:
	case <-time.After(5 * time.Second):
		t.Fatal("the deleted credential's connection is still open")
	}
	select {
	case <-liveDropped:
	case <-time.After(5 * time.Second):
		t.Fatal("the deleted credential's live connection is still open")
	}
	_, err = nats.Connect(con.NATSURL, nats.Token(con.Credential), nats.MaxReconnects(0), nats.Timeout(5*time.Second))
	if err == nil || !refused(err) {
		t.Fatalf("deleted credential: %v, want an authorization violation", err)
	}
	p.Send(t, meshtest.Request{Method: http.MethodDelete, Path: "/consumers/" + con.ConsumerID, Owner: true}).ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	if _, err := p.Conn().JS.Consumer(cctx, bus.EventStream, con.DurableName); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("the deleted credential's durable consumer: %v, want not found", err)
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/consumers", Owner: true}).Expect(t, http.StatusOK).Decode(t, &l)
	if len(l.Consumers) != 1 || l.Consumers[0].ConsumerID != keep.ConsumerID {
		t.Fatalf("list after delete %+v", l.Consumers)
	}
	other, err := nats.Connect(keep.NATSURL, nats.Token(keep.Credential))
	if err != nil {
		t.Fatalf("the other credential: %v", err)
	}
	other.Close()
	body := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/consumers", Owner: true}).Body
	meshtest.AssertNoSecrets(t, []string{con.Credential, keep.Credential}, map[string]string{"list": string(body), "logs": p.Logs.String()})
}
