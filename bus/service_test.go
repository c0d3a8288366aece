package bus

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus/embedded"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go"
)

// TestService_AnswersConcurrentRequestsWithValuesAndErrors: handlers run on
// their own goroutines; replies and error answers (code, message, status)
// reach each caller intact — and, under -race, without racing micro's own
// bookkeeping of the request.
func TestService_AnswersConcurrentRequestsWithValuesAndErrors(t *testing.T) {
	conn := embeddedConn(t)
	svc, err := newService(conn.NC, serviceConfig{Name: "echo", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(time.Second) })
	type echo struct {
		N int `json:"n"`
	}
	err = svc.handle("echo", "test.echo", func(_ context.Context, req *Request) (any, error) {
		var in echo
		if err := req.Decode(&in); err != nil {
			return nil, err
		}
		switch in.N % 3 {
		case 1:
			e := mesh.Errorf(mesh.CodeInvalidTransition, "no %d", in.N)
			e.Status = mesh.StatusCompleted
			return nil, e
		case 2:
			if in.N%2 == 0 {
				panic("handler bug")
			}
			return nil, errors.New("secret internals")
		}
		return in, nil
	}, true)
	if err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	for n := range 3000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var out echo
			err := Call(ctx, conn.NC, "test.echo", echo{N: n}, &out)
			var e *mesh.Error
			switch {
			case n%3 == 0:
				if err != nil || out.N != n {
					t.Errorf("request %d: %+v, %v", n, out, err)
				}
			case n%3 == 1:
				if !errors.As(err, &e) || e.Code != mesh.CodeInvalidTransition || e.Message != fmt.Sprintf("no %d", n) || e.Status != mesh.StatusCompleted {
					t.Errorf("request %d: %#v", n, err)
				}
			default:
				if !errors.As(err, &e) || e.Code != mesh.CodeInternal || e.Message != "internal error" {
					t.Errorf("request %d: %#v, want a generic INTERNAL", n, err)
				}
			}
		}()
	}
	wg.Wait()

	var out echo
	if err := Call(context.Background(), conn.NC, "test.echo", map[string]any{"n": 1, "extra": true}, &out); !errors.Is(err, mesh.ErrInvalidRequest) {
		t.Errorf("unknown field: %v, want INVALID_REQUEST", err)
	}
	if err := Call(context.Background(), conn.NC, "test.nobody", echo{}, &out); !errors.Is(err, &mesh.Error{Code: mesh.CodeUnavailable}) {
		t.Errorf("no responder: %v, want UNAVAILABLE", err)
	}
}

// TestService_RepliesOnlyToARequestersInbox: a request whose reply subject is
// not an inbox (a bucket key, the JetStream API, a service subject) is not
// answered there: a service publishes only to the inbox of whoever asked.
func TestService_RepliesOnlyToARequestersInbox(t *testing.T) {
	conn := embeddedConn(t)
	svc, err := newService(conn.NC, serviceConfig{Name: "hello", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(time.Second) })
	if err := svc.handle("hello", "test.hello", func(context.Context, *Request) (any, error) {
		return map[string]string{"hello": "world"}, nil
	}, true); err != nil {
		t.Fatal(err)
	}
	spy, err := conn.NC.SubscribeSync(">")
	if err != nil {
		t.Fatal(err)
	}
	evil := []string{"$KV.mesh_agents.victim", "$JS.API.STREAM.DELETE.MESH_EVENTS", "mesh.svc.agents.list", "_INBOXX.x", "_R_"}
	for _, reply := range evil {
		if err := conn.NC.PublishRequest("test.hello", reply, nil); err != nil {
			t.Fatal(err)
		}
	}
	// An honest request answered after the others shows they were handled.
	var out map[string]string
	if err := Call(context.Background(), conn.NC, "test.hello", nil, &out); err != nil || out["hello"] != "world" {
		t.Fatalf("honest request: %v %v", out, err)
	}
	for {
		msg, err := spy.NextMsg(0)
		if err != nil {
			break
		}
		for _, reply := range evil {
			if msg.Subject == reply {
				t.Fatalf("the service answered on %s", reply)
			}
		}
	}
}

// embeddedConn starts an embedded server with one open account and connects
// to it, both closed when the test ends.
func embeddedConn(t *testing.T) *Conn {
	t.Helper()
	srv, err := embedded.Start(embedded.Config{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	conn, err := Connect(context.Background(), ConnConfig{Server: srv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.NC.Close() })
	return conn
}

// TestService_HandlerEndsBeforeItsCallerGivesUp: a handler's context ends
// before the caller's deadline, leaving time for the answer to travel, so
// work the caller will not wait for (store retries) stops and is answered.
func TestService_HandlerEndsBeforeItsCallerGivesUp(t *testing.T) {
	conn := embeddedConn(t)
	svc, err := newService(conn.NC, serviceConfig{Name: "slow", Version: "1.0.0", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(time.Second) })
	if err := svc.handle("slow", "test.slow", func(ctx context.Context, _ *Request) (any, error) {
		<-ctx.Done()
		return nil, mesh.Errorf(mesh.CodeUnavailable, "gave up in time")
	}, true); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = Call(ctx, conn.NC, "test.slow", nil, nil)
	var e *mesh.Error
	if !errors.As(err, &e) || e.Code != mesh.CodeUnavailable {
		t.Fatalf("call: %v, want the handler's own UNAVAILABLE before the caller's deadline", err)
	}
}

// TestService_AHandlerWhoseStoreDidNotAnswerIsNotAnInternalError: a
// handler whose store or callee did not answer (a timeout, its own
// deadline, no responders) fails with a plain Go error; the caller hears
// TIMEOUT when the work may have been done and UNAVAILABLE when it was not,
// never an internal error it cannot act on. Any other plain error is still
// internal.
func TestService_AHandlerWhoseStoreDidNotAnswerIsNotAnInternalError(t *testing.T) {
	conn := embeddedConn(t)
	svc, err := newService(conn.NC, serviceConfig{Name: "busy", Version: "1.0.0", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(time.Second) })
	cases := map[string]struct {
		err  error
		want mesh.Code
	}{
		"deadline":      {fmt.Errorf("write the run: %w", context.DeadlineExceeded), mesh.CodeTimeout},
		"nats-timeout":  {fmt.Errorf("publish the event: %w", nats.ErrTimeout), mesh.CodeTimeout},
		"no-responders": {fmt.Errorf("match the rules: %w", nats.ErrNoResponders), mesh.CodeUnavailable},
		"plain":         {errors.New("a defect"), mesh.CodeInternal},
	}
	for name, c := range cases {
		if err := svc.handle(name, "test.busy."+name, func(context.Context, *Request) (any, error) { return nil, c.err }, true); err != nil {
			t.Fatal(err)
		}
	}
	for name, c := range cases {
		err := Call(context.Background(), conn.NC, "test.busy."+name, nil, nil)
		if got := mesh.AsError(err); got == nil || got.Code != c.want {
			t.Errorf("%s: the caller heard %v, want %s", name, err, c.want)
		}
	}
}

// TestService_ShortRequestsKeepMostOfTheirTime: a caller with little time
// left still gets its answer: the handler keeps most of that time.
func TestService_ShortRequestsKeepMostOfTheirTime(t *testing.T) {
	conn := embeddedConn(t)
	svc, err := newService(conn.NC, serviceConfig{Name: "brief", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(time.Second) })
	if err := svc.handle("brief", "test.brief", func(ctx context.Context, _ *Request) (any, error) {
		d, _ := ctx.Deadline()
		return map[string]int64{"left_ms": time.Until(d).Milliseconds()}, nil
	}, true); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	var out map[string]int64
	if err := Call(ctx, conn.NC, "test.brief", nil, &out); err != nil {
		t.Fatal(err)
	}
	if out["left_ms"] < 150 {
		t.Fatalf("the handler had %d ms of a 400 ms request", out["left_ms"])
	}
}

// TestCallIdempotent_ATryWhoseAnswerIsLostIsSentAgain: the first try is
// taken and never answered (its answer was lost with a node); the call
// sends it again and returns the second try's answer. A refusal is
// returned at once, never sent again.
func TestCallIdempotent_ATryWhoseAnswerIsLostIsSentAgain(t *testing.T) {
	conn := embeddedConn(t)
	var tries atomic.Int32
	sub, err := conn.NC.Subscribe("mesh.test.claim", func(m *nats.Msg) {
		if tries.Add(1) == 1 {
			return // taken, answer lost
		}
		_ = m.Respond([]byte(`{"ok":true}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out struct{ OK bool }
	if err := CallIdempotent(ctx, conn.NC, "mesh.test.claim", struct{}{}, &out, 300*time.Millisecond); err != nil || !out.OK {
		t.Fatalf("call: %v %+v", err, out)
	}
	if n := tries.Load(); n != 2 {
		t.Fatalf("%d tries, want 2", n)
	}

	var refusals atomic.Int32
	refuse, err := conn.NC.Subscribe("mesh.test.refuse", func(m *nats.Msg) {
		refusals.Add(1)
		msg := nats.NewMsg(m.Reply)
		msg.Header.Set(headerErrorCode, "409")
		msg.Data = []byte(`{"code":"INVALID_TRANSITION","message":"task run r is completed"}`)
		_ = m.RespondMsg(msg)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer refuse.Unsubscribe()
	err = CallIdempotent(ctx, conn.NC, "mesh.test.refuse", struct{}{}, nil, 300*time.Millisecond)
	if e := mesh.AsError(err); e == nil || e.Code != mesh.CodeInvalidTransition {
		t.Fatalf("refused call: %v, want INVALID_TRANSITION", err)
	}
	if n := refusals.Load(); n != 1 {
		t.Fatalf("a refusal was sent %d times, want once", n)
	}
}

// TestService_StopWhileRequestsArrive: a request micro hands over while the
// service is stopping is either served and waited for, or answered
// UNAVAILABLE so its caller tries again; under -race, Stop's wait never
// races a request being counted in.
func TestService_StopWhileRequestsArrive(t *testing.T) {
	conn := embeddedConn(t)
	for range 40 {
		svc, err := newService(conn.NC, serviceConfig{Name: "stopping", Version: "1.0.0"})
		if err != nil {
			t.Fatal(err)
		}
		err = svc.handle("work", "test.stopping", func(context.Context, *Request) (any, error) {
			return "done", nil
		}, true)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var answered atomic.Int64
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
					var out string
					err := Call(rctx, conn.NC, "test.stopping", nil, &out)
					rcancel()
					switch {
					case err == nil && out == "done":
						answered.Add(1)
					case err == nil:
						t.Errorf("answered %q", out)
					case mesh.AsError(err).Code == mesh.CodeUnavailable, ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrNoResponders):
					default:
						t.Errorf("answered %v, want done or UNAVAILABLE", err)
					}
				}
			}()
		}
		deadline := time.Now().Add(5 * time.Second)
		for answered.Load() < 20 && time.Now().Before(deadline) {
			runtime.Gosched()
		}
		if err := svc.Stop(time.Second); err != nil {
			t.Error(err)
		}
		cancel()
		wg.Wait()
	}
}

// TestCallIdempotent_ACallWhoseEarlierTryWasSentIsNeverSaidNotSent: the
// first try reaches a service whose answer is lost, and the tries after it
// find no service (its node lost). The call's error must not say the
// request was never sent: the first try may have done its work (claimed
// runs), and a caller that believed it sent nothing would forget them.
func TestCallIdempotent_ACallWhoseEarlierTryWasSentIsNeverSaidNotSent(t *testing.T) {
	conn := embeddedConn(t)
	taken := make(chan struct{}, 1)
	sub, err := conn.NC.Subscribe("mesh.test.lost", func(*nats.Msg) {
		select {
		case taken <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-taken
		_ = sub.Unsubscribe() // the service goes with the answer
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err = CallIdempotent(ctx, conn.NC, "mesh.test.lost", struct{}{}, nil, 300*time.Millisecond)
	if err == nil {
		t.Fatal("the call succeeded with no service answering")
	}
	if NotSent(err) {
		t.Fatalf("the call's error says it was never sent, though its first try was taken: %v", err)
	}
}
