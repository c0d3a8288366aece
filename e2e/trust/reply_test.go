package trust_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// gate holds each task until the test opens it.
type gate struct {
	started chan string
	open    chan struct{}
}

func newGate() *gate { return &gate{started: make(chan string, 8), open: make(chan struct{})} }

func (g *gate) Name() string { return "gate" }

func (g *gate) Run(ctx context.Context, t *provider.Task, _ func(provider.Progress)) (*provider.Result, error) {
	g.started <- t.Request.TaskRunID
	select {
	case <-g.open:
		return &provider.Result{Output: map[string]any{"text": "done"}}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// spy is a connection that holds every subscription its credential allows
// and records what reaches it.
type spy struct {
	nc   *nats.Conn
	msgs chan *nats.Msg
}

// listen subscribes to each subject; a subscription the server refuses
// receives nothing, which is what the spy checks.
func listen(t *testing.T, nc *nats.Conn, subjects ...string) *spy {
	t.Helper()
	s := &spy{nc: nc, msgs: make(chan *nats.Msg, 256)}
	for _, subject := range subjects {
		if _, err := nc.ChanSubscribe(subject, s.msgs); err != nil {
			t.Fatalf("subscribe %s: %v", subject, err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return s
}

// foreign returns the first message that reached the spy and that accept
// does not recognise, after the server has delivered everything it sent
// the spy so far.
func (s *spy) foreign(t *testing.T, accept func(*nats.Msg) bool) *nats.Msg {
	t.Helper()
	if err := s.nc.FlushTimeout(10 * time.Second); err != nil && !s.nc.IsClosed() {
		t.Fatalf("spy flush: %v", err)
	}
	for {
		select {
		case m := <-s.msgs:
			if !accept(m) {
				return m
			}
		default:
			return nil
		}
	}
}

// aimReplies sends each of the runtime's own requests once per reply
// subject, then once more with its own inbox and waits for that answer, so
// the platform has answered (or dropped) the aimed ones before it returns.
func aimReplies(t *testing.T, nc *nats.Conn, requests map[string]string, replies []string) {
	t.Helper()
	for request, body := range requests {
		for _, reply := range replies {
			if err := nc.PublishRequest(request, reply, []byte(body)); err != nil {
				t.Fatalf("publish %s: %v", request, err)
			}
		}
	}
	for request, body := range requests {
		if _, err := nc.Request(request, []byte(body), 10*time.Second); err != nil {
			t.Fatalf("own request %s: %v", request, err)
		}
	}
}

// TestAttack_RuntimeCannotAimAnswersAtAnotherRuntime: a runtime asks the
// platform with reply subjects that are another agent's cancel notice,
// another runtime's inbox and another agent's events. The victim's run
// completes, and nothing the attacker caused reaches a subscription to the
// victim's cancels or events, which its credential may no longer hold:
// a runtime subscribes only to its own inbox, under a random token of its
// connection's (nats.go's response inbox), which no one else can name.
func TestAttack_RuntimeCannotAimAnswersAtAnotherRuntime(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	g := newGate()
	victim := meshtest.StartOnlineAgent(t, p, meshtest.AgentOptions{Name: "victim", Provider: g})
	run := p.CreateTask(victim.Agent.ID, "long work")
	select {
	case id := <-g.started:
		if id != run.ID {
			t.Fatalf("the victim started %s, want %s", id, run.ID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the victim never started its run")
	}

	// A second connection with the victim's credential holds every
	// subscription the credential might be allowed.
	vAtt := victim.Attached
	vnc, err := nats.Connect(vAtt.NATS.URL, nats.Token(vAtt.RuntimeToken), nats.CustomInboxPrefix(vAtt.NATS.InboxPrefix),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatalf("the victim's credential: %v", err)
	}
	defer vnc.Close()
	inbox := vAtt.NATS.InboxPrefix
	victimSpy := listen(t, vnc, "mesh.cancel."+victim.Agent.ID+".*", "mesh.evt."+victim.Agent.ID+".>")

	attackerAgent := p.CreateAgent("attacker")
	att := p.Attach(attackerAgent.ID)
	nc, err := nats.Connect(att.NATS.URL, nats.Token(att.RuntimeToken), nats.CustomInboxPrefix(att.NATS.InboxPrefix))
	if err != nil {
		t.Fatalf("the attacker's credential: %v", err)
	}
	defer nc.Close()
	requests := map[string]string{
		bus.RuntimeSubject(attackerAgent.ID, att.RuntimeID, bus.RuntimeOpHello):     `{}`,
		bus.RuntimeSubject(attackerAgent.ID, att.RuntimeID, bus.RuntimeOpOffer):     `{"wait":0}`,
		bus.RuntimeSubject(attackerAgent.ID, att.RuntimeID, bus.RuntimeOpHeartbeat): `{}`,
	}
	aimReplies(t, nc, requests, []string{
		"mesh.cancel." + victim.Agent.ID + "." + run.ID,
		inbox + ".aimed.1",
		"mesh.evt." + victim.Agent.ID + ".task_run." + run.ID,
	})
	if m := victimSpy.foreign(t, func(*nats.Msg) bool { return false }); m != nil {
		t.Fatalf("the attacker's answer reached the victim's credential on %s: %q", m.Subject, m.Data)
	}

	close(g.open)
	meshtest.Eventually(t, 30*time.Second, func() bool { return p.GetTask(run.ID).Status.Terminal() },
		func() string { return "the victim's run never ended" })
	if got := p.GetTask(run.ID); got.Status != mesh.StatusCompleted {
		t.Fatalf("the victim's run ended %s (%+v), want completed", got.Status, got.Error)
	}
}

// TestAttack_ConsumerCannotAimAnswersAtAnotherConsumer: a consumer
// credential asks the JetStream API of its own durable consumer with reply
// subjects that are another agent's live events. A credential following
// that agent's events live receives its agent's events and nothing else.
func TestAttack_ConsumerCannotAimAnswersAtAnotherConsumer(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agentA, agentB := p.CreateAgent("attacker's"), p.CreateAgent("victim")
	attacker := createConsumer(t, p, "attacker", agentA.ID)
	victim := createConsumer(t, p, "victim", agentB.ID)

	vnc := connectLive(t, victim)
	defer vnc.Close()
	victimSpy := listen(t, vnc, victim.Subjects...)

	nc, err := nats.Connect(attacker.NATSURL, nats.Token(attacker.Credential), nats.CustomInboxPrefix(attacker.InboxPrefix))
	if err != nil {
		t.Fatalf("the attacker's credential: %v", err)
	}
	defer nc.Close()
	js, err := jetstream.NewWithAPIPrefix(nc, attacker.JSAPIPrefix)
	if err != nil {
		t.Fatal(err)
	}
	// Its own durable consumer has an event to deliver.
	p.CreateTask(agentA.ID, "bait")
	info := bus.UntrustedJSAPI("CONSUMER.INFO." + bus.EventStream + "." + attacker.DurableName)
	next := bus.UntrustedJSAPI("CONSUMER.MSG.NEXT." + bus.EventStream + "." + attacker.DurableName)
	forged := "mesh.evt." + agentB.ID + ".task_run."
	for _, req := range []struct{ subject, body string }{
		{info, ``}, {next, `{"batch":1,"no_wait":true}`}, {info, ``}, {next, `{"batch":1,"expires":1000000000}`},
	} {
		if err := nc.PublishRequest(req.subject, forged+mesh.NewID(), []byte(req.body)); err != nil {
			t.Fatalf("publish: %v", err)
		}
	}
	// The attacker's own request answered: the aimed ones were handled.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.Consumer(ctx, bus.EventStream, attacker.DurableName); err != nil {
		t.Fatalf("the attacker's own consumer: %v", err)
	}
	// A real event of the victim's agent arrives, so the spy is listening.
	real := p.CreateTask(agentB.ID, "the victim's work")
	meshtest.Eventually(t, 10*time.Second, func() bool {
		select {
		case m := <-victimSpy.msgs:
			if !isEventOf(m, agentB.ID) {
				t.Fatalf("the victim's live subscription received %s (ce-type %q): %.200s", m.Subject, m.Header.Get("ce-type"), m.Data)
			}
			return m.Header.Get("ce-subject") == real.ID
		case <-time.After(100 * time.Millisecond):
			return false
		}
	}, func() string { return "the victim never received its own agent's event" })
	if m := victimSpy.foreign(t, func(m *nats.Msg) bool { return isEventOf(m, agentB.ID) }); m != nil {
		t.Fatalf("the victim's live subscription received %s (ce-type %q): %.200s", m.Subject, m.Header.Get("ce-type"), m.Data)
	}
}

// isEventOf reports whether m is an event of agentID: an event the
// platform published, whose subject names the agent and whose CloudEvent
// attributes say so too.
func isEventOf(m *nats.Msg, agentID string) bool {
	if m.Header.Get("ce-id") == "" || !strings.HasPrefix(m.Subject, "mesh.evt."+agentID+".") {
		return false
	}
	return strings.HasSuffix(m.Subject, "."+m.Header.Get("ce-subject"))
}

func createConsumer(t *testing.T, p *meshtest.Platform, name, agentID string) meshapi.CreateConsumerResponse {
	t.Helper()
	var con meshapi.CreateConsumerResponse
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/consumers", Owner: true,
		JSON: map[string]any{"name": name, "agent_id": agentID}}).Expect(t, http.StatusCreated).Decode(t, &con)
	return con
}

// connectLive connects with a consumer credential the way the docs say to
// follow its events live.
func connectLive(t *testing.T, con meshapi.CreateConsumerResponse) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(con.NATSURL, nats.UserInfo(con.LiveUser, con.Credential), nats.CustomInboxPrefix(con.InboxPrefix))
	if err != nil {
		t.Fatalf("the victim's credential, live: %v", err)
	}
	return nc
}
