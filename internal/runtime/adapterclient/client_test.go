package adapterclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/a2amesh/a2amesh/mesh"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/runtime/adapterclient"
)

func request() *adapterapi.RunTaskRequest {
	return &adapterapi.RunTaskRequest{
		TaskRunID: "run-1", ConversationID: "conv-1", WorkspaceID: "ws-1", TaskType: "chat",
		Input: json.RawMessage(`{"text":"hi"}`), TargetAgentID: "agent-1",
		Platform: adapterapi.Platform{Name: "A2A Mesh", Origin: "mesh.example"},
	}
}

func serve(t *testing.T, h http.HandlerFunc) *adapterclient.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := adapterclient.New(srv.URL + "/run-task")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// closedPort returns a client of an adapter address nothing listens on.
func closedPort(t *testing.T) *adapterclient.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := adapterclient.New("http://" + addr + "/run-task")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRun_ClassifiesEveryReplyShape(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		status   int
		body     string
		wantKind adapterapi.Kind
		wantCode string
	}{
		{"success envelope", 200, `{"success":true,"output":{"text":"ok"}}`, adapterapi.KindSuccess, ""},
		{"legacy output", 200, `{"text":"ok"}`, adapterapi.KindLegacy, ""},
		{"explicit failure", 200, `{"success":false,"error":"nope"}`, adapterapi.KindFailure, ""},
		{"non-2xx", 500, `{"success":true}`, 0, mesh.ReasonAdapterHTTPError},
		{"not JSON", 200, `hello`, 0, mesh.ReasonAdapterInvalidJSON},
		{"JSON array", 200, `[1,2]`, 0, mesh.ReasonAdapterInvalidResponse},
		{"JSON number", 200, `42`, 0, mesh.ReasonAdapterInvalidResponse},
		{"success without object output", 200, `{"success":true,"output":"text"}`, 0, mesh.ReasonAdapterInvalidResponse},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			})
			reply, err := c.Run(context.Background(), request(), nil)
			if tc.wantCode != "" {
				var f *adapterclient.Failure
				if !errors.As(err, &f) || f.Code != tc.wantCode {
					t.Fatalf("error %v, want failure %s", err, tc.wantCode)
				}
				return
			}
			if err != nil || reply.Kind != tc.wantKind {
				t.Fatalf("reply %+v, err %v, want kind %d", reply, err, tc.wantKind)
			}
		})
	}
}

func TestRun_SendsTheSeed000BodyAndAsksForStreaming(t *testing.T) {
	t.Parallel()
	got := make(chan map[string]any, 1)
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept"), adapterapi.MediaNDJSON) || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad headers", 400)
			return
		}
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		got <- body
		fmt.Fprint(w, `{"success":true,"output":{}}`)
	})
	if _, err := c.Run(context.Background(), request(), nil); err != nil {
		t.Fatal(err)
	}
	body := <-got
	for _, field := range []string{"task_run_id", "conversation_id", "workspace_id", "task_type", "input", "initiator_agent_id", "target_agent_id", "platform"} {
		if _, ok := body[field]; !ok {
			t.Errorf("request lacks %s", field)
		}
	}
	for _, field := range []string{"runtime_token", "api_base"} {
		if _, ok := body[field]; ok {
			t.Errorf("request carries %s", field)
		}
	}
}

func TestRun_StreamsProgressBeforeTheResult(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", adapterapi.MediaNDJSON)
		fmt.Fprintln(w, `{"type":"progress","message":"reading","percent":10}`)
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprintln(w, `{"type":"result","result":{"success":true,"output":{"text":"done"}}}`)
	})
	progress := make(chan adapterapi.StreamLine, 4)
	done := make(chan *adapterapi.Reply, 1)
	go func() {
		reply, _ := c.Run(context.Background(), request(), func(l adapterapi.StreamLine) { progress <- l })
		done <- reply
	}()
	select {
	case l := <-progress:
		if l.Message != "reading" || l.Percent == nil || *l.Percent != 10 {
			t.Fatalf("progress line %+v", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no progress arrived while the task was running")
	}
	select {
	case <-done:
		t.Fatal("the result arrived before the adapter sent it")
	default:
	}
	close(release)
	if reply := <-done; reply == nil || reply.Output["text"] != "done" {
		t.Fatalf("reply %+v", reply)
	}
}

func TestRun_StreamWithoutResultIsAConnectionLoss(t *testing.T) {
	t.Parallel()
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", adapterapi.MediaNDJSON)
		fmt.Fprintln(w, `{"type":"progress","message":"x"}`)
	})
	_, err := c.Run(context.Background(), request(), nil)
	var f *adapterclient.Failure
	if !errors.As(err, &f) || f.Code != mesh.ReasonAdapterConnectionLost {
		t.Fatalf("error %v, want %s", err, mesh.ReasonAdapterConnectionLost)
	}
}

func TestRun_UnreachableAndTimeoutHaveTheirOwnCodes(t *testing.T) {
	t.Parallel()
	_, err := closedPort(t).Run(context.Background(), request(), nil)
	var f *adapterclient.Failure
	if !errors.As(err, &f) || f.Code != mesh.ReasonAdapterUnreachable {
		t.Fatalf("closed port: %v, want %s", err, mesh.ReasonAdapterUnreachable)
	}

	hang := make(chan struct{})
	defer close(hang)
	slow := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = slow.Run(ctx, request(), nil)
	if !errors.As(err, &f) || f.Code != mesh.ReasonAdapterTimeout {
		t.Fatalf("hanging adapter: %v, want %s", err, mesh.ReasonAdapterTimeout)
	}
}

func TestHealth_ReadsNextToTheRunTaskPath(t *testing.T) {
	t.Parallel()
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `{"ok":true,"provider":"echo","busy":true}`)
	})
	h, err := c.Health(context.Background())
	if err != nil || !h.OK || h.Provider != "echo" || !h.Busy {
		t.Fatalf("health %+v, err %v", h, err)
	}
}

func TestNew_RefusesNonHTTPEndpoints(t *testing.T) {
	t.Parallel()
	for _, e := range []string{"", "localhost:18789", "ftp://x/run-task", "http://"} {
		if _, err := adapterclient.New(e); err == nil {
			t.Errorf("endpoint %q accepted", e)
		}
	}
}

// Only a call that never reached the adapter is marked NotDelivered: a
// connection the adapter took and then dropped may have started the task.
func TestRun_OnlyAnUnopenedConnectionIsNotDelivered(t *testing.T) {
	t.Parallel()
	_, err := closedPort(t).Run(context.Background(), request(), nil)
	var f *adapterclient.Failure
	if !errors.As(err, &f) || !f.NotDelivered {
		t.Fatalf("closed port: %v (%+v), want a failure marked not delivered", err, f)
	}

	dropped := serve(t, func(w http.ResponseWriter, r *http.Request) {
		dropConnection(w)
	})
	_, err = dropped.Run(context.Background(), request(), nil)
	if !errors.As(err, &f) || f.NotDelivered || f.Code != mesh.ReasonAdapterConnectionLost {
		t.Fatalf("dropped connection: %v (%+v), want %s, delivered", err, f, mesh.ReasonAdapterConnectionLost)
	}
}

// Reachable counts any HTTP answer from /health, so an adapter without one
// still gets its tasks, and only a closed port is unreachable.
func TestReachable_AnyHTTPAnswerCounts(t *testing.T) {
	t.Parallel()
	missing := serve(t, http.NotFound)
	if err := missing.Reachable(context.Background()); err != nil {
		t.Fatalf("adapter without /health: %v, want reachable", err)
	}
	closed := closedPort(t)
	if err := closed.Reachable(context.Background()); err == nil {
		t.Fatal("closed port is reachable, want an error")
	}
}

// An adapter that refuses a task before starting it (429 while its queue is
// full, 503 while it shuts down) did not receive it: the runtime may give the
// run back rather than fail it. Other statuses are the adapter's answer.
func TestRun_ARefusalBeforeStartingIsNotDelivered(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		c := serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprint(w, `{"success":false,"error":"adapter shutting down"}`)
		})
		_, err := c.Run(context.Background(), request(), nil)
		var f *adapterclient.Failure
		if !errors.As(err, &f) || !f.NotDelivered || f.Code != mesh.ReasonAdapterHTTPError {
			t.Errorf("HTTP %d: %v (%+v), want %s marked not delivered", status, err, f, mesh.ReasonAdapterHTTPError)
		}
		if err := c.Reachable(context.Background()); (err == nil) != (status != http.StatusServiceUnavailable) {
			t.Errorf("adapter answering /health with %d: reachable error %v; want one for 503 only", status, err)
		}
	}
	failed := serve(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	_, err := failed.Run(context.Background(), request(), nil)
	var f *adapterclient.Failure
	if !errors.As(err, &f) || f.NotDelivered {
		t.Errorf("HTTP 500: %v (%+v), want a delivered failure", err, f)
	}
}

// connCounting serves h and counts the connections the client opened.
func connCounting(t *testing.T, h http.HandlerFunc) (*adapterclient.Client, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c, err := adapterclient.New(srv.URL + "/run-task")
	if err != nil {
		t.Fatal(err)
	}
	return c, &conns
}

// keepAliveAdapter answers /health allowing kept connections, and tasks as
// a streaming adapter does: headers first, then the result line.
func keepAliveAdapter(allow bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"ok":true,"keep_alive":%t}`, allow)
			return
		}
		w.Header().Set("Content-Type", adapterapi.MediaNDJSON)
		w.WriteHeader(http.StatusOK)
		fmt.Fprintln(w, `{"type":"result","result":{"success":true,"output":{"text":"ok"}}}`)
	}
}

// An adapter that allows kept connections (its /health says so) gets its
// tasks over one connection; any other gets a fresh connection per task.
func TestRun_KeepsConnectionsOnlyToAnAdapterThatAllowsIt(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{true, false} {
		c, conns := connCounting(t, keepAliveAdapter(allow))
		if _, err := c.Health(context.Background()); err != nil {
			t.Fatal(err)
		}
		before := conns.Load()
		for range 5 {
			if _, err := c.Run(context.Background(), request(), nil); err != nil {
				t.Fatal(err)
			}
		}
		got, want := conns.Load()-before, int64(5)
		if allow {
			want = 1
		}
		if got != want {
			t.Errorf("adapter allowing kept connections %t: 5 tasks opened %d connections, want %d", allow, got, want)
		}
	}
}

// cuttingAdapter is a client of an adapter that allows kept connections
// and closes, without a word, the connection of the nth task request it
// sees; its health was checked once (health checks use a fresh connection
// each, so no connection is kept yet). tasks counts the task requests.
func cuttingAdapter(t *testing.T, nth int64) (c *adapterclient.Client, conns, tasks *atomic.Int64) {
	t.Helper()
	tasks = new(atomic.Int64)
	answer := keepAliveAdapter(true)
	c, conns = connCounting(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" && tasks.Add(1) == nth {
			dropConnection(w)
			return
		}
		answer(w, r)
	})
	if _, err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c, conns, tasks
}

// A kept connection the adapter closes as the next task is sent on it (its
// idle timeout, a restart) carried no task the adapter took: the task is
// sent again on a fresh connection, and delivered once.
func TestRun_AKeptConnectionClosedBeforeAnyAnswerIsRetriedOnAFreshOne(t *testing.T) {
	t.Parallel()
	// The second task arrives on the kept connection, which is cut.
	c, conns, tasks := cuttingAdapter(t, 2)
	before := conns.Load()
	for i := range 3 {
		reply, err := c.Run(context.Background(), request(), nil)
		if err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
		if reply.Kind != adapterapi.KindSuccess {
			t.Fatalf("task %d: reply %+v", i, reply)
		}
	}
	if tasks.Load() != 4 {
		t.Fatalf("adapter saw %d task requests, want 4 (one cut, sent again)", tasks.Load())
	}
	// The kept one, a fresh one for the task sent again, a new kept one.
	if n := conns.Load() - before; n != 3 {
		t.Fatalf("3 tasks opened %d connections, want 3", n)
	}
}

// A task's first connection to an adapter that allows kept connections,
// cut before any answer (a stopping adapter's port closing with the
// connection not yet accepted resets it), carried no task the adapter
// took either: the task is sent again on a fresh connection, not reported
// lost.
func TestRun_ANewConnectionClosedBeforeAnyAnswerIsRetriedOnAFreshOne(t *testing.T) {
	t.Parallel()
	c, conns, tasks := cuttingAdapter(t, 1)
	before := conns.Load()
	reply, err := c.Run(context.Background(), request(), nil)
	if err != nil {
		t.Fatalf("a task whose new connection was cut before any answer: %v", err)
	}
	if reply.Kind != adapterapi.KindSuccess {
		t.Fatalf("reply %+v", reply)
	}
	if tasks.Load() != 2 {
		t.Fatalf("adapter saw %d task requests, want 2 (one cut, sent again)", tasks.Load())
	}
	if n := conns.Load() - before; n != 2 {
		t.Fatalf("the task opened %d connections, want 2", n)
	}
}

// An adapter that takes work only from its runtime checks a bearer token on
// its requests; the client sends it with every one, the health checks too.
func TestClient_SendsTheAdapterTokenWithEveryRequest(t *testing.T) {
	t.Parallel()
	seen := make(chan string, 8)
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		seen <- r.URL.Path + " " + r.Header.Get("Authorization")
		if r.URL.Path == "/health" {
			fmt.Fprint(w, `{"ok":true,"keep_alive":true}`)
			return
		}
		fmt.Fprint(w, `{"success":true,"output":{"text":"ok"}}`)
	})
	if _, err := c.Run(context.Background(), request(), nil); err != nil {
		t.Fatal(err)
	}
	if got := <-seen; got != "/run-task " {
		t.Fatalf("without a token: %q, want no Authorization", got)
	}
	c.SetAuthToken("tok-1")
	if _, err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.SetAuthToken("tok-2")
	for range 2 { // a fresh connection, then a kept one (keep_alive)
		if _, err := c.Run(context.Background(), request(), nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"/health Bearer tok-1", "/run-task Bearer tok-2", "/run-task Bearer tok-2"} {
		if got := <-seen; got != want {
			t.Fatalf("request %q, want %q", got, want)
		}
	}
}

// dropConnection closes a request's connection without a word, as an
// adapter that dies (or a port that closes) does.
func dropConnection(w http.ResponseWriter) {
	if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
		conn.Close()
	}
}
