package meshapi_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/bus/embedded"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
)

// lostFirstCopy is a task queue whose copy that takes the first create is
// lost with it (a node dies: no answer ever comes); every later create is
// answered with the run its idempotency key names.
type lostFirstCopy struct {
	mu    sync.Mutex
	sends []meshapi.CreateTaskRunRequest
}

func startLostFirstCopy(t *testing.T) (*nats.Conn, *lostFirstCopy) {
	t.Helper()
	srv, err := embedded.Start(embedded.Config{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	conn, err := bus.Connect(context.Background(), bus.ConnConfig{Server: srv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.NC.Close() })
	q := &lostFirstCopy{}
	_, err = conn.NC.Subscribe(bus.ServiceSubject(bus.ServiceTaskQueue, meshapi.OpTaskCreate), func(m *nats.Msg) {
		var req meshapi.CreateTaskRunRequest
		_ = json.Unmarshal(m.Data, &req)
		q.mu.Lock()
		q.sends = append(q.sends, req)
		first := len(q.sends) == 1
		q.mu.Unlock()
		if first {
			return
		}
		b, _ := json.Marshal(meshapi.CreateTaskRunResponse{TaskRun: mesh.TaskRun{ID: "run-of-" + req.IdempotencyKey, IdempotencyKey: req.IdempotencyKey}})
		_ = m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	return conn.NC, q
}

func (q *lostFirstCopy) count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.sends)
}

// TestCreateTaskRun_WithAKeySendsAgainWhenACopyIsLostWithTheRequest: a
// create with an idempotency key that the task queue never answers is sent
// once more with the same key before the caller's deadline, and the answer
// to that second send is the result (the same key cannot make two runs).
func TestCreateTaskRun_WithAKeySendsAgainWhenACopyIsLostWithTheRequest(t *testing.T) {
	nc, q := startLostFirstCopy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	res, err := meshapi.NewClient(nc).CreateTaskRun(ctx, meshapi.CreateTaskRunRequest{TargetAgentID: "a", IdempotencyKey: "k1"})
	if err != nil {
		t.Fatalf("create with a key after a lost copy: %v", err)
	}
	if res.TaskRun.ID != "run-of-k1" {
		t.Fatalf("run %q, want the one the key names", res.TaskRun.ID)
	}
	if n := q.count(); n != 2 {
		t.Fatalf("%d sends, want 2", n)
	}
}

// TestCreateTaskRun_WithoutAKeyIsNotSentAgain: a create without an
// idempotency key is sent once: sending it again could make a second run.
// Its caller is told it timed out.
func TestCreateTaskRun_WithoutAKeyIsNotSentAgain(t *testing.T) {
	nc, q := startLostFirstCopy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := meshapi.NewClient(nc).CreateTaskRun(ctx, meshapi.CreateTaskRunRequest{TargetAgentID: "a"})
	if code := mesh.AsError(err).Code; code != mesh.CodeTimeout {
		t.Fatalf("create without a key: %v, want %s", err, mesh.CodeTimeout)
	}
	if n := q.count(); n != 1 {
		t.Fatalf("%d sends, want 1", n)
	}
}
