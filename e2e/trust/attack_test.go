// Package trust_test attacks the platform's NATS server the way an untrusted
// client would: a paired runtime, an event consumer credential, a revoked or
// replaced runtime. Each attacker tries every way out of its confinement it
// can think of; after each attack the platform must be intact.
package trust_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// world is what an attack must not change: a victim agent with its runtime
// and a run, the set of streams, and the owner's access.
type world struct {
	p       *meshtest.Platform
	conn    *bus.Conn
	victim  mesh.Agent
	rtB     meshtest.Attached
	runB    mesh.TaskRun
	record  []byte
	streams []string
	// runEvent is the stream sequence of the newest event of runB: an
	// event forged about it would be stored after it.
	runEvent uint64
}

// newWorld sets up a victim on an in-process platform.
func newWorld(t *testing.T, p *meshtest.Platform) *world { return newWorldOn(t, p, p.Conn()) }

// newWorldOn sets up a victim on a platform whose bus conn reaches as a service.
func newWorldOn(t *testing.T, p *meshtest.Platform, conn *bus.Conn) *world {
	t.Helper()
	w := &world{p: p, conn: conn, victim: p.CreateAgent("victim")}
	w.rtB = p.Attach(w.victim.ID)
	w.runB = p.CreateTask(w.victim.ID, "the victim's secret work")
	w.record = w.agentRecord(t)
	w.streams = w.streamNames(t)
	meshtest.Eventually(t, 10*time.Second, func() bool { w.runEvent = w.lastRunEvent(t); return w.runEvent != 0 },
		func() string { return "the victim's run has no event stored" })
	return w
}

// lastRunEvent is the stream sequence of the newest stored event of runB
// (0: none).
func (w *world) lastRunEvent(t *testing.T) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := w.conn.JS.Stream(ctx, bus.EventStream)
	if err != nil {
		t.Fatalf("event stream: %v", err)
	}
	msg, err := s.GetLastMsgForSubject(ctx, bus.EventSubject(w.victim.ID, string(mesh.KindTaskRun), w.runB.ID))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0
	}
	if err != nil {
		t.Fatalf("the victim's run's events: %v", err)
	}
	return msg.Sequence
}

func (w *world) agentRecord(t *testing.T) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := w.conn.JS.KeyValue(ctx, bus.BucketAgents)
	if err != nil {
		t.Fatalf("agents bucket: %v", err)
	}
	e, err := kv.Get(ctx, w.victim.ID)
	if err != nil {
		t.Fatalf("victim's record: %v", err)
	}
	return e.Value()
}

func (w *world) streamNames(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var names []string
	lister := w.conn.JS.StreamNames(ctx)
	for n := range lister.Name() {
		names = append(names, n)
	}
	if err := lister.Err(); err != nil {
		t.Fatalf("stream names: %v", err)
	}
	slices.Sort(names)
	return names
}

// intact fails the test if anything the attacks aimed at changed.
func (w *world) intact(t *testing.T, after string) {
	t.Helper()
	if got := w.streamNames(t); !slices.Equal(got, w.streams) {
		t.Fatalf("after %s the streams are %v, want %v", after, got, w.streams)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range w.streams {
		info, err := w.conn.JS.Stream(ctx, name)
		if err != nil {
			t.Fatalf("after %s stream %s: %v", after, name, err)
		}
		if name == "KV_"+bus.BucketRuns && info.CachedInfo().State.Msgs == 0 {
			t.Fatalf("after %s the task runs bucket is empty", after)
		}
	}
	if got := w.lastRunEvent(t); got != w.runEvent {
		t.Fatalf("after %s the victim's run has an event stored at %d, after its last one (%d)", after, got, w.runEvent)
	}
	if got := w.agentRecord(t); !bytes.Equal(got, w.record) {
		t.Fatalf("after %s the victim's agent record changed:\n%s\nwant\n%s", after, got, w.record)
	}
	var agent mesh.Agent
	w.p.Do(http.MethodGet, "/agent-accounts/"+w.victim.ID, nil, &agent)
	if agent.ID != w.victim.ID {
		t.Fatalf("after %s the victim agent reads as %q", after, agent.ID)
	}
	if run := w.p.GetTask(w.runB.ID); run.ID != w.runB.ID || run.Status != mesh.StatusPending {
		t.Fatalf("after %s the victim's run reads %s %s", after, run.ID, run.Status)
	}
	w.p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/readyz"}).Expect(t, http.StatusOK)
}

// evilReplies are reply subjects an attacker hopes the platform or the server
// will publish on.
func (w *world) evilReplies() []string {
	return []string{
		"$JS.API.STREAM.DELETE." + bus.EventStream,
		"$JS.API.STREAM.PURGE.KV_" + bus.BucketRuns,
		"$JS.API.STREAM.DELETE.KV_" + bus.BucketPresence,
		"$JS.API.STREAM.DELETE.KV_" + bus.BucketAgents,
		"$KV." + bus.BucketAgents + "." + w.victim.ID,
		"$KV." + bus.BucketConfig + "." + bus.ConfigOwnerTokenHash,
		"$SYS.REQ.SERVER.PING.CONNZ",
		bus.RuntimeSubject(w.victim.ID, w.rtB.RuntimeID, bus.RuntimeOpHello),
		bus.EventSubject(w.victim.ID, string(mesh.KindTaskRun), w.runB.ID),
		bus.RegionEventSubject(bus.DefaultRegion, w.victim.ID, string(mesh.KindTaskRun), w.runB.ID),
	}
}

// directPublishes are subjects an attacker publishes to outright.
func (w *world) directPublishes() []string {
	return []string{
		"$KV." + bus.BucketAgents + "." + w.victim.ID,
		"$KV." + bus.BucketConfig + "." + bus.ConfigOwnerTokenHash,
		"$JS.API.STREAM.DELETE." + bus.EventStream,
		"$JS.API.STREAM.PURGE.KV_" + bus.BucketRuns,
		"$JS.API.STREAM.DELETE.KV_" + bus.BucketAgents,
		"$JS.API.CONSUMER.DELETE." + bus.EventStream + ".x",
		"$O." + bus.ObjectArtifacts + ".M.x",
		bus.RuntimeSubject(w.victim.ID, w.rtB.RuntimeID, bus.RuntimeOpComplete),
		bus.EventSubject(w.victim.ID, string(mesh.KindTaskRun), w.runB.ID),
		// What the event stream stores (a forged event would be kept).
		bus.RegionEventSubject(bus.DefaultRegion, w.victim.ID, string(mesh.KindTaskRun), w.runB.ID),
		bus.ServiceSubject(bus.ServiceAgents, "list"),
		"$SYS.REQ.SERVER.PING.CONNZ",
	}
}

// attacker is an untrusted connection and what it may legitimately use.
type attacker struct {
	nc *nats.Conn
	// js and consumer are its own durable consumer (event consumer
	// credentials only: a runtime has none).
	js       jetstream.JetStream
	consumer string
	// requests are service requests it may make, with their bodies
	// (runtimes only).
	requests map[string]string
}

// runtimeAttacker is a runtime's connection: it may say hello and ask for
// work, under its own subjects.
func runtimeAttacker(nc *nats.Conn, agentID, runtimeID string) *attacker {
	return &attacker{nc: nc, requests: map[string]string{
		bus.RuntimeSubject(agentID, runtimeID, bus.RuntimeOpHello): `{}`,
		bus.RuntimeSubject(agentID, runtimeID, bus.RuntimeOpOffer): `{"wait":0}`,
	}}
}

// fetchOne pulls one message from the attacker's own consumer.
func (a *attacker) fetchOne(t *testing.T) jetstream.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cons, err := a.js.Consumer(ctx, bus.EventStream, a.consumer)
	if err != nil {
		t.Fatalf("own consumer %s: %v", a.consumer, err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatalf("fetch from own consumer: %v", err)
	}
	for msg := range batch.Messages() {
		return msg
	}
	t.Fatalf("own consumer %s had nothing to fetch: %v", a.consumer, batch.Error())
	return nil
}

// settle makes sure the server has read everything the attacker sent.
func (a *attacker) settle(t *testing.T) {
	t.Helper()
	if a.nc.IsClosed() {
		return
	}
	if err := a.nc.FlushTimeout(10 * time.Second); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

// attackAll runs every attack of a connected attacker, checking the world
// after each kind. refill puts a message in the attacker's consumer.
func attackAll(t *testing.T, w *world, a *attacker, refill func()) {
	if a.consumer != "" {
		attackOwnConsumer(t, w, a, refill)
	}

	// 2. Service requests whose reply subject is someone else's.
	for request, body := range a.requests {
		for _, reply := range w.evilReplies() {
			_ = a.nc.PublishRequest(request, reply, []byte(body))
		}
		// A request of its own that is answered shows the others were handled.
		if _, err := a.nc.Request(request, []byte(body), 10*time.Second); err != nil {
			t.Fatalf("own request %s: %v", request, err)
		}
		a.settle(t)
		w.intact(t, "service requests with chosen reply subjects")
	}
	attackOutright(t, w, a)
}

// attackOwnConsumer acks and pulls from the attacker's own consumer with
// reply subjects in the JetStream API.
func attackOwnConsumer(t *testing.T, w *world, a *attacker, refill func()) {
	// 1. An ack (and a pull) whose reply subject is the JetStream API.
	for _, reply := range w.evilReplies() {
		refill()
		msg := a.fetchOne(t)
		if err := a.nc.PublishRequest(msg.Reply(), reply, []byte("+ACK")); err != nil {
			t.Fatalf("ack: %v", err)
		}
		a.settle(t)
	}
	w.intact(t, "acks with chosen reply subjects")

	for _, api := range []string{"$JS.API.", bus.JetStreamAPIPrefix + "."} {
		next := api + "CONSUMER.MSG.NEXT." + bus.EventStream + "." + a.consumer
		for _, reply := range w.evilReplies() {
			refill()
			_ = a.nc.PublishRequest(next, reply, []byte(`{"batch":1,"no_wait":true}`))
			a.settle(t)
		}
	}
	w.intact(t, "pulls with chosen reply subjects")
}

// attackOutright publishes where the attacker has no business and asks for
// JetStream consumers and streams of its own making.
func attackOutright(t *testing.T, w *world, a *attacker) {
	// 3. Publishing outright where it has no business.
	for _, subject := range w.directPublishes() {
		_ = a.nc.PublishRequest(subject, a.nc.NewRespInbox(), []byte(`{"evil":true}`))
	}
	a.settle(t)
	w.intact(t, "direct publishes")

	// 4. JetStream consumers and streams of its own making.
	evil := []struct{ subject, body string }{
		{"$JS.API.CONSUMER.CREATE." + bus.EventStream + "." + bus.ConsumerNameBase("x"), `{"stream_name":"` + bus.EventStream + `","config":{"deliver_subject":"$JS.API.STREAM.DELETE.` + bus.EventStream + `"}}`},
		{"$JS.API.CONSUMER.DURABLE.CREATE." + bus.EventStream + ".evil", `{"stream_name":"` + bus.EventStream + `","config":{"durable_name":"evil","deliver_subject":"$JS.API.STREAM.DELETE.` + bus.EventStream + `"}}`},
		{"$JS.API.CONSUMER.CREATE.KV_" + bus.BucketRuns + ".evil", `{"stream_name":"KV_` + bus.BucketRuns + `","config":{"name":"evil","deliver_subject":"$JS.API.STREAM.PURGE.KV_` + bus.BucketRuns + `"}}`},
		{"$JS.API.STREAM.CREATE.EVIL", `{"name":"EVIL","subjects":["evil.>"]}`},
	}
	// Its own consumer names, with a push delivery into the JetStream API.
	for _, name := range ownConsumerNames(a.consumer) {
		for _, filter := range []string{"", ".mesh.evt.>"} {
			cfg := fmt.Sprintf(`{"stream_name":%q,"config":{"name":%q,"durable_name":%q,"filter_subject":"mesh.evt.>","deliver_subject":"$JS.API.STREAM.DELETE.%s","ack_policy":"none"}}`,
				bus.EventStream, name, name, bus.EventStream)
			evil = append(evil, struct{ subject, body string }{"$JS.API.CONSUMER.CREATE." + bus.EventStream + "." + name + filter, cfg})
		}
	}
	for _, e := range evil {
		_ = a.nc.PublishRequest(e.subject, a.nc.NewRespInbox(), []byte(e.body))
	}
	a.settle(t)
	w.intact(t, "JetStream consumer and stream requests")
}

// ownConsumerNames are the names an attacker's credential covers (for a
// runtime, which has none, a name it might try).
func ownConsumerNames(consumer string) []string {
	if consumer == "" {
		return []string{"evil"}
	}
	if strings.HasPrefix(consumer, "con_") {
		names := []string{consumer}
		for i := 1; i <= 8; i++ {
			names = append(names, fmt.Sprintf("%s_%d", consumer, i))
		}
		return names
	}
	return []string{consumer}
}

// TestAttack_RuntimeCannotReachBeyondItsAgent: a runtime with a valid token
// tries every way out; the platform stays intact and the runtime still works.
func TestAttack_RuntimeCannotReachBeyondItsAgent(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"tcp", "websocket"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			p := meshtest.StartPlatform(t, func(c *platform.Config) {
				if transport == "websocket" {
					c.NATSWebSocketListen = meshtest.LoopbackListen
				}
			})
			attackAsRuntime(t, newWorld(t, p))
		})
	}
}

// attackAsRuntime pairs a runtime of its own and attacks from it, over
// WebSocket when the platform offers it.
func attackAsRuntime(t *testing.T, w *world) {
	p := w.p
	agentA := p.CreateAgent("attacker")
	rtA := p.Attach(agentA.ID)
	url := rtA.NATS.URL
	if rtA.NATS.WSURL != "" {
		url = rtA.NATS.WSURL
	}
	nc, err := nats.Connect(url, nats.Token(rtA.RuntimeToken), nats.CustomInboxPrefix(rtA.NATS.InboxPrefix))
	if err != nil {
		t.Fatalf("runtime refused: %v", err)
	}
	defer nc.Close()
	a := runtimeAttacker(nc, agentA.ID, rtA.RuntimeID)

	// No agent's events reach it, not even its own: a runtime hears only
	// answers to its own requests.
	spy := listen(t, nc, bus.AgentEventsFilter(w.victim.ID), bus.AgentEventsFilter(agentA.ID), "mesh.evt.>")
	p.CreateTask(w.victim.ID, "more secret work")
	p.CreateTask(agentA.ID, "a's work")
	if _, err := a.nc.Request(bus.RuntimeSubject(agentA.ID, rtA.RuntimeID, bus.RuntimeOpHello), []byte(`{}`), 10*time.Second); err != nil {
		t.Fatalf("own hello: %v", err)
	}
	if m := spy.foreign(t, func(*nats.Msg) bool { return false }); m != nil {
		t.Fatalf("the runtime read an event %s", m.Subject)
	}

	attackAll(t, w, a, func() { p.CreateTask(agentA.ID, "bait") })

	// The runtime still does its own work.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := meshapi.NewClient(nc).Runtime(agentA.ID, rtA.RuntimeID).Heartbeat(ctx, meshapi.HeartbeatRequest{}); err != nil {
		t.Fatalf("the attacker's own heartbeat: %v", err)
	}
}

// TestAttack_ConsumerCredentialCannotReachBeyondItsEvents: an event consumer
// credential tries every way out.
func TestAttack_ConsumerCredentialCannotReachBeyondItsEvents(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	attackAsConsumer(t, newWorld(t, p))
}

// attackAsConsumer creates an event consumer credential and attacks from it.
func attackAsConsumer(t *testing.T, w *world) {
	p := w.p
	agentA := p.CreateAgent("watched")
	var con meshapi.CreateConsumerResponse
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/consumers", Owner: true,
		JSON: map[string]any{"name": "spy", "agent_id": agentA.ID}}).Expect(t, http.StatusCreated).Decode(t, &con)
	nc, err := nats.Connect(con.NATSURL, nats.Token(con.Credential), nats.CustomInboxPrefix(con.InboxPrefix))
	if err != nil {
		t.Fatalf("consumer credential refused: %v", err)
	}
	defer nc.Close()
	js, _ := jetstream.NewWithAPIPrefix(nc, con.JSAPIPrefix)
	if con.JSAPIPrefix == "" {
		js, _ = jetstream.New(nc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Its durable consumer, as the docs say to use it.
	if _, err := js.Consumer(ctx, bus.EventStream, con.DurableName); err != nil {
		_, err = js.CreateOrUpdateConsumer(ctx, bus.EventStream, jetstream.ConsumerConfig{
			Durable: con.DurableName, FilterSubject: con.Subjects[0],
			DeliverPolicy: jetstream.DeliverAllPolicy, AckPolicy: jetstream.AckExplicitPolicy,
		})
		if err != nil {
			t.Fatalf("own durable consumer: %v", err)
		}
	}
	a := &attacker{nc: nc, js: js, consumer: con.DurableName}
	attackAll(t, w, a, func() { p.CreateTask(agentA.ID, "bait") })
}

// TestAttack_RevokedAndReplacedRuntimesLoseTheirConnectionsAtOnce: a
// runtime's open connection is closed within a second of its credential
// being revoked or replaced, and the credential connects no more.
func TestAttack_RevokedAndReplacedRuntimesLoseTheirConnectionsAtOnce(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	for _, how := range []string{"revoked", "replaced"} {
		agent := p.CreateAgent(how)
		att := p.Attach(agent.ID)
		kickedWithin(t, how, att, func() { endCredential(t, p, how, agent.ID, att.RuntimeID) })
	}
}

// endCredential revokes a runtime, or replaces it by pairing the agent again.
func endCredential(t *testing.T, p *meshtest.Platform, how, agentID, runtimeID string) {
	t.Helper()
	if how == "revoked" {
		p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/" + runtimeID + "/revoke", Owner: true}).Expect(t, http.StatusOK)
		return
	}
	p.Attach(agentID)
}

// kickedWithin connects as att, ends its credential with end, and checks the
// connection is dropped within a second and cannot come back.
func kickedWithin(t *testing.T, how string, att meshtest.Attached, end func()) {
	t.Helper()
	dropped := make(chan struct{}, 1)
	nc, err := nats.Connect(att.NATS.URL, nats.Token(att.RuntimeToken), nats.CustomInboxPrefix(att.NATS.InboxPrefix),
		nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
		nats.DisconnectErrHandler(func(*nats.Conn, error) {
			select {
			case dropped <- struct{}{}:
			default:
			}
		}))
	if err != nil {
		t.Fatalf("%s: runtime refused before: %v", how, err)
	}
	defer nc.Close()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	end()
	select {
	case <-dropped:
	case <-time.After(time.Second):
		t.Fatalf("%s: the runtime's connection was still open a second later", how)
	}
	if c, err := nats.Connect(att.NATS.URL, nats.Token(att.RuntimeToken), nats.NoReconnect()); err == nil {
		c.Close()
		t.Fatalf("%s: the credential connected again", how)
	}
}

func waitEvent(t *testing.T, sub *nats.Subscription, typ, subject string) {
	t.Helper()
	for {
		msg, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("waiting for %s of %s: %v", typ, subject, err)
		}
		if bus.EventType(msg.Header) == typ && msg.Header.Get("ce-subject") == subject {
			return
		}
	}
}
