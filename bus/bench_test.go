package bus

import (
	"context"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus/embedded"
	"github.com/a2amesh/a2amesh/mesh"
)

// benchTraceParent is a caller's W3C traceparent, as an API request brings.
const benchTraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// benchService is an echo service on an embedded server, with its caller's
// connection.
func benchService(b *testing.B) *Conn {
	b.Helper()
	srv, err := embedded.Start(embedded.Config{StoreDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Shutdown)
	conn, err := Connect(context.Background(), ConnConfig{Server: srv})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.NC.Close() })
	svc, err := newService(conn.NC, serviceConfig{Name: "echo", Version: "1.0.0"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = svc.Stop(time.Second) })
	if err := svc.handle("echo", "bench.echo", func(_ context.Context, req *Request) (any, error) {
		var in map[string]any
		return in, req.Decode(&in)
	}, true); err != nil {
		b.Fatal(err)
	}
	return conn
}

// BenchmarkCall is one service request and its answer, outside any trace
// (a runtime's heartbeat or claim).
func BenchmarkCall(b *testing.B) {
	benchCall(b, context.Background())
}

// BenchmarkCall_InTrace is one service request made on behalf of a traced
// API request.
func BenchmarkCall_InTrace(b *testing.B) {
	benchCall(b, WithTraceParent(context.Background(), benchTraceParent))
}

func benchCall(b *testing.B, ctx context.Context) {
	conn := benchService(b)
	req := map[string]any{"task_run_id": "r1", "attempt": 1}
	b.ReportAllocs()
	for b.Loop() {
		var out map[string]any
		if err := Call(ctx, conn.NC, "bench.echo", req, &out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCall_SixteenAtOnce is service requests made 16 at a time on one
// connection, as the cycle phase's runtimes and creator make them, with
// the CPU of the whole process (server, caller and service) per request:
// what one of a run's three requests costs at the least, with a service
// that only decodes it and answers.
func BenchmarkCall_SixteenAtOnce(b *testing.B) {
	conn := benchService(b)
	req := map[string]any{"task_run_id": "r1", "attempt": 1}
	b.ResetTimer()
	cpu := processCPU()
	spread(b, 16, func(int) func() error {
		return func() error {
			var out map[string]any
			return Call(context.Background(), conn.NC, "bench.echo", req, &out)
		}
	})
	b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

// BenchmarkEncodeEvent is the encoding of one event of a traced request.
func BenchmarkEncodeEvent(b *testing.B) {
	p := &Publisher{source: "urn:a2amesh:taskqueue"}
	ctx := WithTraceParent(context.Background(), benchTraceParent)
	ev := Event{Type: mesh.EventTaskRunCreated, Kind: mesh.KindTaskRun, AgentID: "agent-1", Subject: "run-1", Data: map[string]any{"status": "pending"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.encode(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
}
