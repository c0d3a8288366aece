package credentials_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
)

// asyncErrors collects the errors the server sends a connection.
type asyncErrors struct {
	mu   sync.Mutex
	errs []error
}

func (a *asyncErrors) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.errs = append(a.errs, err)
}

// waitFor waits for a permissions violation naming subject.
func (a *asyncErrors) waitFor(t *testing.T, subject string) {
	t.Helper()
	meshtest.Eventually(t, 5*time.Second, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, err := range a.errs {
			if strings.Contains(err.Error(), "Permissions Violation") && strings.Contains(err.Error(), `"`+subject+`"`) {
				return true
			}
		}
		return false
	}, func() string { return "no permissions violation for " + subject + "; errors: " + a.String() })
}

func (a *asyncErrors) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var s []string
	for _, err := range a.errs {
		s = append(s, err.Error())
	}
	return strings.Join(s, "; ")
}

// TestCallout_ConfinesARuntimeConnectionToItsOwnAgent: the NATS server
// itself, through the credential service's auth callout, admits a runtime token
// with permissions for its own agent only (design §4.1, §7), over TCP and
// over WebSocket.
func TestCallout_ConfinesARuntimeConnectionToItsOwnAgent(t *testing.T) {
	for _, transport := range []string{"tcp", "websocket"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			p := meshtest.StartPlatform(t, func(c *platform.Config) {
				if transport == "websocket" {
					c.NATSWebSocketListen = meshtest.LoopbackListen
				}
			})
			url := p.NATSURL()
			if transport == "websocket" {
				url = p.WebSocketURL()
				if !strings.HasPrefix(url, "ws://127.0.0.1:") {
					t.Fatalf("WebSocket URL %q", url)
				}
			}
			checkConfinement(t, p, url)
		})
	}
}

func checkConfinement(t *testing.T, p *meshtest.Platform, url string) {
	agentA, agentB := p.CreateAgent("a"), p.CreateAgent("b")
	rtA := p.Attach(agentA.ID)
	rtB := p.OnlineRuntime(t, agentB.ID)
	if rtA.NATS.InboxPrefix != bus.RuntimeInboxPrefix(rtA.RuntimeID) {
		t.Fatalf("attach told the runtime %+v", rtA.NATS)
	}
	runB := p.CreateTask(agentB.ID, "b's work")

	errs := &asyncErrors{}
	nc, err := nats.Connect(url, nats.Token(rtA.RuntimeToken), nats.CustomInboxPrefix(rtA.NATS.InboxPrefix), nats.ErrorHandler(errs.handler))
	if err != nil {
		t.Fatalf("the runtime's own token was refused: %v", err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// What it may do: its own runtime subjects, through which it is
	// offered its agent's runs.
	rc := meshapi.NewClient(nc).Runtime(agentA.ID, rtA.RuntimeID)
	p.WaitRuntimeView(t, agentA.ID, rtA.RuntimeID, meshtest.Listed)
	if _, err := rc.Heartbeat(ctx, meshapi.HeartbeatRequest{}); err != nil {
		t.Fatalf("heartbeat over NATS: %v", err)
	}
	if v := p.RuntimeView(t, agentA.ID, rtA.RuntimeID); v.Status != mesh.PresenceOnline {
		t.Fatalf("runtime is %s after a NATS heartbeat", v.Status)
	}
	hello, err := rc.Hello(ctx)
	if err != nil || hello.AgentID != agentA.ID || hello.RuntimeID != rtA.RuntimeID {
		t.Fatalf("hello: %+v, %v", hello, err)
	}
	runA := p.CreateTask(agentA.ID, "a's work")

	res, err := rc.Offer(ctx, meshapi.OfferRequest{Wait: 5 * time.Second})
	if err != nil || len(res.Offers) != 1 || res.Offers[0].TaskRunID != runA.ID || res.Offers[0].Attempt != 1 {
		t.Fatalf("offer over NATS: %+v, %v", res, err)
	}
	qm := res.Offers[0]
	claimed, err := rc.Claim(ctx, meshapi.ClaimRequest{TaskRunID: qm.TaskRunID, Attempt: qm.Attempt})
	if err != nil || claimed.Status != mesh.StatusRunning || claimed.RuntimeID != rtA.RuntimeID || claimed.Attempt != 1 {
		t.Fatalf("claim over NATS: %+v, %v", claimed, err)
	}
	if _, err := rc.Complete(ctx, meshapi.CompleteRequest{TaskRunID: runA.ID, Attempt: 1, Output: json.RawMessage(`{"text":"over nats"}`)}); err != nil {
		t.Fatalf("complete over NATS: %v", err)
	}
	if got := p.GetTask(runA.ID); got.Status != mesh.StatusCompleted {
		t.Fatalf("run completed over NATS is %s", got.Status)
	}

	// What it may not do: each is refused by the server with a permissions violation.
	// Nothing but its own inbox: not even its own agent's events, since
	// any runtime may aim the answer to a request of its own at any
	// subject of the runtimes' account.
	subs := []string{
		bus.AgentEventsFilter(agentA.ID),
		bus.AgentEventsFilter(agentB.ID),
		"mesh.cancel." + agentA.ID + ".*",
		"mesh.cancel.>",
		"mesh.evt.>",
		"_INBOX.>",
		bus.RuntimeInboxPrefix(rtB.RuntimeID) + ".>",
		"mesh.rt.>",
		"$JS.API.>",
		bus.AuthCalloutSubject,
	}
	for _, subject := range subs {
		if _, err := nc.SubscribeSync(subject); err != nil {
			t.Fatalf("subscribe %s: %v", subject, err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		errs.waitFor(t, subject)
	}
	pubs := []string{
		bus.RuntimeSubject(agentB.ID, rtB.RuntimeID, bus.RuntimeOpHeartbeat),
		bus.RuntimeSubject(agentB.ID, rtB.RuntimeID, bus.RuntimeOpClaim),
		bus.RuntimeSubject(agentA.ID, rtB.RuntimeID, bus.RuntimeOpComplete),
		bus.RuntimeSubject(agentB.ID, rtB.RuntimeID, bus.RuntimeOpOffer),
		bus.UntrustedJSAPI("STREAM.INFO." + bus.EventStream),
		bus.UntrustedJSAPI("CONSUMER.MSG.NEXT." + bus.EventStream + "." + bus.WebhookConsumer(agentB.ID)),
		"$JS.API.STREAM.INFO." + bus.EventStream,
		"$JS.API.STREAM.PURGE.KV_" + bus.BucketRuns,
		"$JS.API.DIRECT.GET.KV_" + bus.BucketRuns,
		bus.ServiceSubject(bus.ServiceAgents, meshapi.OpAgentCreate),
		bus.ServiceSubject(bus.ServiceCredentials, meshapi.OpPairingRevoke),
		bus.EventSubject(agentA.ID, string(mesh.KindTaskRun), runA.ID),
	}
	for _, subject := range pubs {
		if err := nc.PublishRequest(subject, rtA.NATS.InboxPrefix+".x", []byte(`{}`)); err != nil {
			t.Fatalf("publish %s: %v", subject, err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		errs.waitFor(t, subject)
	}
	if !nc.IsConnected() {
		t.Fatal("the connection was dropped; refusals should only refuse")
	}
	// None of it reached the platform: B's runtime is untouched and B's run
	// is still queued for it.
	if v := p.RuntimeView(t, agentB.ID, rtB.RuntimeID); v.State != mesh.RuntimeActive {
		t.Fatalf("b's runtime is %s", v.State)
	}
	if got := p.PullRun(t, agentB.ID, rtB.RuntimeToken); got.ID != runB.ID || got.Attempt != 1 {
		t.Fatalf("b pulled %s attempt %d, want its run %s attempt 1", got.ID, got.Attempt, runB.ID)
	}
}

// refused reports whether a connection attempt was turned away by the
// server: an authorization violation, or (over WebSocket, where the server
// may close the socket while the client still writes its CONNECT) the
// server hanging up during the handshake. The server is known to be up: the
// current credential connects right after.
func refused(err error) bool {
	if errors.Is(err, nats.ErrAuthorization) {
		return true
	}
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"authorization violation", "broken pipe", "connection reset by peer", "eof"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// TestCallout_RefusesWrongAndRevokedTokens: without a live runtime
// credential a connection is not admitted at all.
func TestCallout_RefusesWrongAndRevokedTokens(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.NATSWebSocketListen = meshtest.LoopbackListen })
	agent := p.CreateAgent("gone")
	revoked := p.Attach(agent.ID)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/" + revoked.RuntimeID + "/revoke", Owner: true}).Expect(t, http.StatusOK)
	replaced := p.Attach(agent.ID)
	current := p.Attach(agent.ID) // a re-pair: replaces the previous runtime
	p.WaitRuntimeView(t, agent.ID, replaced.RuntimeID, func(v mesh.RuntimeView) bool { return v.State == mesh.RuntimeReplaced })

	for _, url := range []string{p.NATSURL(), p.WebSocketURL()} {
		for name, opts := range map[string][]nats.Option{
			"revoked token":  {nats.Token(revoked.RuntimeToken)},
			"replaced token": {nats.Token(replaced.RuntimeToken)},
			"wrong token":    {nats.Token("a2art_" + strings.Repeat("A", 43))},
			"owner token":    {nats.Token(p.OwnerToken)},
			"no credential":  {},
			"user/password":  {nats.UserInfo("mesh-service", "guess")},
		} {
			nc, err := nats.Connect(url, append(opts, nats.MaxReconnects(0), nats.Timeout(5*time.Second))...)
			if err == nil {
				nc.Close()
				t.Fatalf("%s over %s: admitted", name, url)
			}
			if !refused(err) {
				t.Fatalf("%s over %s: %v, want an authorization violation", name, url, err)
			}
		}
		nc, err := nats.Connect(url, nats.Token(current.RuntimeToken), nats.CustomInboxPrefix(current.NATS.InboxPrefix))
		if err != nil {
			t.Fatalf("the current token over %s: %v", url, err)
		}
		nc.Close()
	}
}
