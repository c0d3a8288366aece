package adapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
	"github.com/a2amesh/a2amesh/internal/runtime/adapterclient"
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
	// While the task runs, the port stays open and says the adapter is
	// going: health and new tasks answer 503.
	eventually(t, "health to answer 503", func() bool {
		resp, err := http.Get(url + "/health")
		if err != nil {
			t.Fatalf("health while the task runs: %v, want 503", err)
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	if status, msg := failureOf(t, post(t.Context(), url, taskBody("r2"))); status != http.StatusServiceUnavailable || msg != ErrShuttingDown.Error() {
		t.Fatalf("new task while stopping: %d %q, want 503 %q", status, msg, ErrShuttingDown)
	}
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

// outcome is how one task sent to a stopping adapter went.
type outcome int

const (
	answered outcome = iota // its reply came
	refused                 // refused before it was delivered: the sender stops
	lost                    // neither: the runtime could not tell it from a task lost midway
)

// stopUnderLoad has four senders send tasks with send, each until one is
// refused, stops the adapter once more than 20 were answered, and returns
// the failures of the tasks lost, and how many were answered.
func stopUnderLoad(t *testing.T, s *Server, served <-chan error, send func() (outcome, error)) (lostTasks []error, answeredTasks int) {
	t.Helper()
	var (
		mu      sync.Mutex
		senders sync.WaitGroup
	)
	for range 4 {
		senders.Add(1)
		go func() {
			defer senders.Done()
			for {
				how, err := send()
				mu.Lock()
				switch how {
				case answered:
					answeredTasks++
				case lost:
					lostTasks = append(lostTasks, err)
				}
				mu.Unlock()
				if how == refused {
					return
				}
			}
		}()
	}
	eventually(t, "tasks to be answered", func() bool { mu.Lock(); defer mu.Unlock(); return answeredTasks > 20 })
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	receive(t, served, "Serve")
	senders.Wait()
	return lostTasks, answeredTasks
}

func answerAtOnce(ctx context.Context, _ *provider.Task) (*provider.Result, error) {
	return &provider.Result{Output: map[string]any{"text": "ok"}}, nil
}

// A restart under a steady stream of tasks: every request sent while the
// adapter shuts down gets an answer (its task's reply, or 503) or finds the
// port closed; none is cut on a connection the adapter had accepted, which
// the runtime could not tell from a task lost midway. Each sender stops
// sending once told the adapter is shutting down, as the runtime does.
func TestShutdown_NoRequestIsCutWhileTheAdapterStops(t *testing.T) {
	s, err := New(Config{Provider: funcProvider(answerAtOnce), Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	url, served := serve(t, s)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	cut, n := stopUnderLoad(t, s, served, func() (outcome, error) {
		resp, err := client.Post(url+"/run-task", "application/json", strings.NewReader(taskBody("r")))
		status := 0
		if err == nil {
			status = resp.StatusCode
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		var op *net.OpError
		switch {
		case err == nil && status == http.StatusOK:
			return answered, nil
		case err == nil && status == http.StatusServiceUnavailable, errors.As(err, &op) && op.Op == "dial":
			return refused, nil
		case err == nil:
			return lost, fmt.Errorf("HTTP %d", status)
		}
		return lost, err
	})
	if len(cut) > 0 {
		t.Fatalf("%d requests were cut while the adapter stopped (%d answered), first: %v", len(cut), n, cut[0])
	}
}

// TestShutdown_NoTaskOnAKeptConnectionIsLostWhileTheAdapterStops: the
// runtime's client keeps its connections to the adapter (its /health
// allows it); a stopping adapter closes them, and no task sent as they
// close is lost: each is answered, or refused before delivery (the runtime
// gives its run back).
func TestShutdown_NoTaskOnAKeptConnectionIsLostWhileTheAdapterStops(t *testing.T) {
	s, err := New(Config{Provider: funcProvider(answerAtOnce), Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	url, served := serve(t, s)
	client, err := adapterclient.New(url + "/run-task")
	if err != nil {
		t.Fatal(err)
	}
	if h, err := client.Health(context.Background()); err != nil || !h.KeepAlive {
		t.Fatalf("health %+v, %v: want kept connections allowed", h, err)
	}
	task := &adapterapi.RunTaskRequest{TaskRunID: "r", ConversationID: "c", TaskType: "chat", Input: []byte(`{"text":"hi"}`)}
	lostTasks, n := stopUnderLoad(t, s, served, func() (outcome, error) {
		_, err := client.Run(context.Background(), task, nil)
		var f *adapterclient.Failure
		switch {
		case err == nil:
			return answered, nil
		case errors.As(err, &f) && f.NotDelivered:
			return refused, nil
		}
		return lost, err
	})
	if len(lostTasks) > 0 {
		t.Fatalf("%d tasks were lost while the adapter stopped (%d answered), first: %v", len(lostTasks), n, lostTasks[0])
	}
}
