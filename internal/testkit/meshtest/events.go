package meshtest

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Event is one CloudEvent as GET /events serves it (structured JSON mode).
type Event struct {
	// SSEID is the "id:" line: the event stream sequence, for resuming.
	SSEID           string          `json:"-"`
	ID              string          `json:"id"`
	Type            string          `json:"type"`
	Source          string          `json:"source"`
	Subject         string          `json:"subject"`
	SpecVersion     string          `json:"specversion"`
	DataContentType string          `json:"datacontenttype"`
	Sequence        string          `json:"sequence"`
	AgentID         string          `json:"agentid"`
	Data            json.RawMessage `json:"data"`
	// Raw is the whole "data:" payload, for secret scans.
	Raw string `json:"-"`
}

// EventStream follows GET /events over a real HTTP connection.
type EventStream struct {
	events chan Event
	done   chan struct{}
	err    error
	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex
	// comments holds the comment lines received but pings, in order.
	comments []string
}

// Comments returns the comment lines the stream received so far (": ping"
// and ": connected" left out), such as ": unreachable_regions east".
func (s *EventStream) Comments() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.comments)
}

// StreamEvents opens GET /events?<query> with the owner credential and returns
// once the server has said ": connected" — its consumer exists, so every event
// published from then on is delivered. The stream closes when the test ends.
func (p *Platform) StreamEvents(t testing.TB, query url.Values) *EventStream {
	t.Helper()
	return p.StreamEventsFrom(t, query, "")
}

// StreamEventsFrom is StreamEvents resuming after the event with SSE id
// lastEventID (sent as Last-Event-ID), as a reconnecting client does.
func (p *Platform) StreamEventsFrom(t testing.TB, query url.Values, lastEventID string) *EventStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.APIBase+"/events?"+query.Encode(), nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.OwnerToken)
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET /events: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		t.Fatalf("GET /events: HTTP %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		resp.Body.Close()
		cancel()
		t.Fatalf("GET /events: Content-Type %q, want text/event-stream", ct)
	}
	s := &EventStream{events: make(chan Event, 1024), done: make(chan struct{}), ctx: ctx, cancel: cancel}
	connected := make(chan struct{})
	go s.read(resp, connected)
	select {
	case <-connected:
	case <-s.done:
		t.Fatalf("GET /events ended before it connected: %v", s.err)
	case <-time.After(10 * time.Second):
		t.Fatal("GET /events never said it was connected")
	}
	t.Cleanup(s.Close)
	return s
}

func (s *EventStream) read(resp *http.Response, connected chan struct{}) {
	defer close(s.done)
	defer close(s.events)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var id string
	var data []string
	signalled := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == ": connected" && !signalled:
			signalled = true
			close(connected)
		case line == "":
			if len(data) > 0 {
				raw := strings.Join(data, "\n")
				ev := Event{SSEID: id, Raw: raw}
				if err := json.Unmarshal([]byte(raw), &ev); err != nil {
					s.err = err
					return
				}
				ev.SSEID, ev.Raw = id, raw
				select {
				case s.events <- ev:
				case <-s.ctx.Done():
					return
				}
			}
			id, data = "", nil
		case strings.HasPrefix(line, ":") && line != ": ping" && line != ": connected":
			s.mu.Lock()
			s.comments = append(s.comments, line)
			s.mu.Unlock()
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	s.err = sc.Err()
}

// Next returns the next event, failing the test if none arrives in time.
func (s *EventStream) Next(t testing.TB, timeout time.Duration) Event {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatalf("event stream ended: %v", s.err)
		}
		return ev
	case <-time.After(timeout):
		t.Fatalf("no event within %s", timeout)
	}
	return Event{}
}

// Until collects events until one matches stop (included), failing the test
// if that takes longer than timeout.
func (s *EventStream) Until(t testing.TB, timeout time.Duration, stop func(Event) bool) []Event {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var out []Event
	for {
		remaining := time.Until(deadline)
		if remaining <= 0 {
			t.Fatalf("the awaited event did not arrive within %s; got %d events: %s", timeout, len(out), typesOf(out))
		}
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("event stream ended: %v; got %s", s.err, typesOf(out))
			}
			out = append(out, ev)
			if stop(ev) {
				return out
			}
		case <-time.After(remaining):
			t.Fatalf("the awaited event did not arrive within %s; got %d events: %s", timeout, len(out), typesOf(out))
		}
	}
}

// Discard drops the stream's events from now on, for a stream kept for
// its comments: its server is never held up by a reader that reads nothing.
func (s *EventStream) Discard() {
	go func() {
		for range s.events {
		}
	}()
}

// Close ends the stream.
func (s *EventStream) Close() {
	s.cancel()
	<-s.done
}

// TypeIs matches events of type typ (with or without the dev.a2amesh. prefix)
// about subject (any subject when empty).
func TypeIs(typ, subject string) func(Event) bool {
	if !strings.HasPrefix(typ, "dev.a2amesh.") {
		typ = "dev.a2amesh." + typ
	}
	return func(ev Event) bool { return ev.Type == typ && (subject == "" || ev.Subject == subject) }
}

func typesOf(evs []Event) string {
	parts := make([]string, len(evs))
	for i, ev := range evs {
		parts[i] = strings.TrimPrefix(ev.Type, "dev.a2amesh.") + "(" + ev.Subject + ")"
	}
	return strings.Join(parts, ", ")
}
