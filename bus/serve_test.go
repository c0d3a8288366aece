package bus

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go/micro"
)

// TestServe_AnswersOpsOnServiceSubjectsAndRuntimeOpsOnRuntimeSubjects: a
// service's operations are reached at ServiceSubject(name, op), its runtime
// operations at the runtime's own subject (with the runtime's ids in the
// request subject), and NATS service discovery names the service and its
// endpoints; after Stop nobody answers.
func TestServe_AnswersOpsOnServiceSubjectsAndRuntimeOpsOnRuntimeSubjects(t *testing.T) {
	conn := embeddedConn(t)
	svc, err := Serve(conn.NC, ServiceSpec{
		Name: "demo", Description: "a demonstration",
		Endpoints: []Endpoint{
			{Name: "hello", Handler: func(context.Context, *Request) (any, error) { return map[string]string{"said": "hello"}, nil }},
			{Name: "fail", Handler: func(context.Context, *Request) (any, error) { return nil, mesh.Errorf(mesh.CodeConflict, "no") }},
			{Name: "ping", Runtime: true, Handler: func(_ context.Context, req *Request) (any, error) {
				agent, runtime, op, _ := ParseRuntimeSubject(req.Subject)
				return []string{agent, runtime, op}, nil
			}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var hello map[string]string
	if err := Call(ctx, conn.NC, ServiceSubject("demo", "hello"), nil, &hello); err != nil || hello["said"] != "hello" {
		t.Fatalf("hello: %v %v", hello, err)
	}
	if err := Call(ctx, conn.NC, ServiceSubject("demo", "fail"), nil, nil); mesh.AsError(err).Code != mesh.CodeConflict {
		t.Fatalf("fail answered %v, want CONFLICT", err)
	}
	var ping []string
	agentID, runtimeID := mesh.NewID(), mesh.NewID()
	if err := Call(ctx, conn.NC, RuntimeSubject(agentID, runtimeID, "ping"), nil, &ping); err != nil || len(ping) != 3 || ping[0] != agentID || ping[1] != runtimeID || ping[2] != "ping" {
		t.Fatalf("runtime ping: %v %v", ping, err)
	}

	reply, err := conn.NC.RequestWithContext(ctx, "$SRV.INFO.demo", nil)
	if err != nil {
		t.Fatal(err)
	}
	var info micro.Info
	if err := json.Unmarshal(reply.Data, &info); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, e := range info.Endpoints {
		names[e.Name] = e.Subject
	}
	if info.Name != "demo" || info.Version != serviceVersion || names["hello"] != ServiceSubject("demo", "hello") || names["runtime_ping"] != RuntimeSubjectPattern("ping") {
		t.Fatalf("service discovery: %s %s %v", info.Name, info.Version, names)
	}

	if err := svc.Stop(time.Second); err != nil {
		t.Fatal(err)
	}
	if err := Call(ctx, conn.NC, ServiceSubject("demo", "hello"), nil, nil); mesh.AsError(err).Code != mesh.CodeUnavailable {
		t.Fatalf("a stopped service answered: %v", err)
	}
}

// TestPeriodic_RunsAtStartThenEveryIntervalUntilStop: AtStart runs the job
// at once; it then runs again on its interval; Stop cancels the context a
// run in progress holds and returns only once that run has returned, and
// nothing runs after Stop.
func TestPeriodic_RunsAtStartThenEveryIntervalUntilStop(t *testing.T) {
	var runs atomic.Int32
	blocked := make(chan struct{})
	var sawCancel atomic.Bool
	job := &Periodic{Interval: 10 * time.Millisecond, AtStart: true, Run: func(ctx context.Context) {
		if runs.Add(1) == 3 {
			// The third run holds on until the job is stopped.
			close(blocked)
			<-ctx.Done()
			sawCancel.Store(true)
		}
	}}
	job.Start(context.Background())
	job.Start(context.Background()) // a second Start runs no second loop
	select {
	case <-blocked:
	case <-time.After(10 * time.Second):
		t.Fatalf("the job ran %d times in 10s", runs.Load())
	}
	job.Stop()
	if !sawCancel.Load() {
		t.Fatal("Stop returned before the run in progress saw its context end")
	}
	// Stop returned once the loop had ended: no run comes after it.
	if n := runs.Load(); n != 3 {
		t.Fatalf("%d runs, want 3: the first at start, two ticks", n)
	}
	job.Stop() // stopping twice is harmless
}

// TestPeriodic_StopsWithItsContext: a job started with a context ends when
// that context does, and its Run sees the context's cause.
func TestPeriodic_StopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	errGone := errors.New("service gone")
	got := make(chan error, 1)
	job := &Periodic{Interval: time.Hour, AtStart: true, Run: func(ctx context.Context) {
		<-ctx.Done()
		select {
		case got <- context.Cause(ctx):
		default:
		}
	}}
	job.Start(ctx)
	cancel(errGone)
	select {
	case err := <-got:
		if !errors.Is(err, errGone) {
			t.Fatalf("the run saw %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the job's run never saw its context end")
	}
	job.Stop() // returns: the loop has ended with its context
	(&Periodic{}).Stop()
}

// TestServe_WaitingOpsDoNotHoldUpTheOthers: requests of an operation named
// in Waits (a long poll) may all be waiting while the service's other
// operations, bounded by Concurrency, are still answered.
func TestServe_WaitingOpsDoNotHoldUpTheOthers(t *testing.T) {
	conn := embeddedConn(t)
	release := make(chan struct{})
	var waiting atomic.Int32
	svc, err := Serve(conn.NC, ServiceSpec{
		Name: "waits", Concurrency: 2,
		Endpoints: []Endpoint{
			{Name: "wait", Waits: true, Handler: func(ctx context.Context, _ *Request) (any, error) {
				waiting.Add(1)
				select {
				case <-release:
				case <-ctx.Done():
				}
				return "done", nil
			}},
			{Name: "now", Handler: func(context.Context, *Request) (any, error) { return "now", nil }},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = svc.Stop(time.Second) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const n = 5
	answered := make(chan error, n)
	for range n {
		go func() { answered <- Call(ctx, conn.NC, ServiceSubject("waits", "wait"), nil, nil) }()
	}
	for waiting.Load() < n {
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d waiting requests reached their handler with a concurrency of 2", waiting.Load(), n)
		case <-time.After(10 * time.Millisecond):
		}
	}
	var now string
	if err := Call(ctx, conn.NC, ServiceSubject("waits", "now"), nil, &now); err != nil || now != "now" {
		t.Fatalf("with %d requests waiting, another operation answered %q, %v", n, now, err)
	}
	close(release)
	for range n {
		if err := <-answered; err != nil {
			t.Fatal(err)
		}
	}
}
