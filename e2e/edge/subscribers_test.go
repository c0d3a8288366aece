package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// received counts the events a subscriber was given, by event id, and
// which runs' completions were among them.
type received struct {
	// refuseNext makes a webhook endpoint refuse the next delivery (503),
	// which the platform then retries.
	refuseNext atomic.Bool
	mu         sync.Mutex
	events     map[string]int
	completed  map[string]bool
	// kinds holds each run's event types received, as "<run> <type>".
	kinds map[string]bool
}

func newReceived() *received {
	return &received{events: map[string]int{}, completed: map[string]bool{}, kinds: map[string]bool{}}
}

func (r *received) add(eventID, eventType, runID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events[eventID]++
	r.kinds[runID+" "+eventType] = true
	if eventType == mesh.EventTaskRunCompleted {
		r.completed[runID] = true
	}
}

// has reports whether an event of eventType of run runID was received.
func (r *received) has(eventType, runID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.kinds[runID+" "+eventType]
}

// missing returns the runs of ids whose completion was not received.
func (r *received) missing(ids []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, id := range ids {
		if !r.completed[id] {
			out = append(out, id)
		}
	}
	return out
}

// repeated returns the events received more than once.
func (r *received) repeated() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for id, n := range r.events {
		if n != 1 {
			out[id] = n
		}
	}
	return out
}

// waitCompletions waits until r holds the completion of every run of ids.
func (r *received) waitCompletions(t *testing.T, who string, ids []string, within time.Duration) {
	t.Helper()
	meshtest.Eventually(t, within, func() bool { return len(r.missing(ids)) == 0 }, func() string {
		return fmt.Sprintf("%s has not received the completion of %d of %d runs", who, len(r.missing(ids)), len(ids))
	})
}

// webhookReceiver is a webhook endpoint on loopback that records every
// CloudEvent delivered to it.
func webhookReceiver(t *testing.T) (*received, string) {
	t.Helper()
	got := newReceived()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if got.refuseNext.CompareAndSwap(true, false) {
			http.Error(w, "try again later", http.StatusServiceUnavailable)
			return
		}
		var ev struct {
			ID   string `json:"id"`
			Type string `json:"type"`
			Data struct {
				RunID string `json:"task_run_id"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" {
			http.Error(w, "not a CloudEvent", http.StatusBadRequest)
			return
		}
		got.add(ev.ID, ev.Type, ev.Data.RunID)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return got, srv.URL
}

// readConsumer reads a consumer credential's durable consumer as its
// holder does (its own connection, the JetStream API prefix and inbox it
// was told), acknowledging every event, until the test ends.
func readConsumer(t *testing.T, con meshapi.CreateConsumerResponse) *received {
	t.Helper()
	got := newReceived()
	nc, err := nats.Connect(con.NATSURL, nats.Token(con.Credential), nats.CustomInboxPrefix(con.InboxPrefix), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatalf("connect as consumer credential: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.NewWithAPIPrefix(nc, con.JSAPIPrefix)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := js.Consumer(ctx, con.Stream, con.DurableName)
	if err != nil {
		t.Fatalf("the credential's consumer on %s: %v", con.Stream, err)
	}
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		_, _, id, _ := bus.ParseEventSubject(msg.Subject())
		got.add(msg.Headers().Get("ce-id"), msg.Headers().Get("ce-type"), id)
		_ = msg.Ack()
	})
	if err != nil {
		t.Fatalf("read the credential's consumer: %v", err)
	}
	t.Cleanup(cc.Stop)
	return got
}
