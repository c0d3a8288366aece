package adapter

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapterapi"
)

// serve runs s on a loopback listener and returns its base URL and a
// channel that receives Serve's result.
func serve(t *testing.T, s *Server) (string, <-chan error) {
	t.Helper()
	ln, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	return "http://" + ln.Addr().String(), served
}

func TestShutdown_LetsTheRunningTaskFinishWithinTheGrace(t *testing.T) {
	p := newBlockingProvider()
	s, err := New(Config{Provider: p, Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	url, served := serve(t, s)
	running := postAsync(t.Context(), url, taskBody("r1"))
	receive(t, p.started, "task start")

	shutdown := make(chan error, 1)
	go func() { shutdown <- s.Shutdown(context.Background()) }()
	eventually(t, "new requests to be refused", func() bool {
		_, err := http.Get(url + "/health")
		return err != nil
	})
	p.release <- struct{}{}
	if reply := parseReply(t, receive(t, running, "reply")); reply.Kind != adapterapi.KindSuccess {
		t.Fatalf("reply = %+v, want the task's success", reply)
	}
	if err := receive(t, shutdown, "Shutdown"); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := receive(t, served, "Serve"); err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func TestShutdown_StopsTheRunningTaskWhenTheGraceRunsOut(t *testing.T) {
	p := newBlockingProvider()
	s, err := New(Config{Provider: p, Workdir: t.TempDir(), QueueSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	url, _ := serve(t, s)
	running := postAsync(t.Context(), url, taskBody("r1"))
	receive(t, p.started, "task start")
	queued := postAsync(t.Context(), url, taskBody("r2"))
	eventually(t, "r2 to queue", func() bool { return s.queued() == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown err = %v, want the grace to run out", err)
	}
	if cause := receive(t, p.stopped, "provider stop"); !errors.Is(cause, ErrShuttingDown) {
		t.Fatalf("cause = %v, want ErrShuttingDown", cause)
	}
	if status, _ := failureOf(t, receive(t, queued, "queued reply")); status != http.StatusServiceUnavailable {
		t.Fatalf("queued request got %d, want 503", status)
	}
	reply := parseReply(t, receive(t, running, "running reply"))
	if reply.Kind != adapterapi.KindFailure || reply.Error != ErrShuttingDown.Error() {
		t.Fatalf("reply = %+v, want the shutdown failure", reply)
	}
}
